package predictor

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// Outcome codes of a proposal the orchestrator did not file.
const (
	// CodeInvalidFormula: an exploit named a formula the factory does not
	// have; no vault request is made.
	CodeInvalidFormula ledger.Code = "vault.invalid_formula"
	// CodeVaultRefused: the vault refused an exploit's request (its
	// prediction stands).
	CodeVaultRefused ledger.Code = "vault.refused"
	// CodeOverBudget: the proposal did not fit the run's action points.
	CodeOverBudget ledger.Code = "predict.over_budget"
	// CodeDuplicate: an open prediction already holds the theory.
	CodeDuplicate ledger.Code = "predict.duplicate"
	// CodeNoNewEvidence: the theory was dismissed and the proposal brings
	// no new evidence naming the dismissed issue.
	CodeNoNewEvidence ledger.Code = "predict.no_new_evidence"
)

// similarTheory is the share of common words above which two theories
// count as the same.
const similarTheory = 0.6

// Decision is what the orchestrator decided of one proposal: file it
// (Code empty) or not, and why.
type Decision struct {
	Proposal Proposal
	Code     ledger.Code
	Reason   string
	// Supersedes is the open prediction this one replaces, when the
	// proposal named one the predictor may close (0 otherwise).
	Supersedes int64
}

// Filed reports whether the decision is to file.
func (d Decision) Filed() bool { return d.Code == "" }

// History is the predictor's track record as the filter needs it.
type History struct {
	// Open are the open prediction/unreviewed issues; Dismissed the
	// closed prediction/dismissed ones.
	Open, Dismissed []forge.Issue
	// Me is the predictor bot's login: only its own predictions are
	// superseded.
	Me string
}

// Decide applies the rules of spec 40 §3.7.1 to the proposals, in
// order: an exploit must name a formula in formulas; a theory an open
// prediction holds is a duplicate (normalised title or similar theory);
// a dismissed theory returns only naming the dismissed issue with new
// evidence; and what passes is filed while it fits the budget.
func Decide(props []Proposal, h History, formulas map[string]bool) []Decision {
	left := Budget
	var out []Decision
	var filed []Proposal
	for _, p := range props {
		d := Decision{Proposal: p}
		switch {
		case p.Kind == Exploit && !formulas[p.Formula]:
			d.Code, d.Reason = CodeInvalidFormula, fmt.Sprintf("formula %q does not exist", p.Formula)
		default:
			d.Supersedes = supersedable(p.Supersedes, h)
			if n, ok := duplicate(p, h.Open, d.Supersedes, filed); ok {
				d.Code, d.Reason = CodeDuplicate, duplicateReason(n)
			} else if n, ok := matches(p, h.Dismissed); ok && (p.Dismissed != n || strings.TrimSpace(p.NewEvidence) == "") {
				d.Code, d.Reason = CodeNoNewEvidence, fmt.Sprintf("#%d was dismissed; a re-filed theory names it with new evidence", n)
			} else if p.Kind.Cost() > left {
				d.Code, d.Reason = CodeOverBudget, fmt.Sprintf("costs %d, %d of %d points left", p.Kind.Cost(), left, Budget)
			}
		}
		if d.Filed() {
			left -= p.Kind.Cost()
			filed = append(filed, p)
		}
		out = append(out, d)
	}
	return out
}

func duplicateReason(n int64) string {
	if n == 0 {
		return "an earlier proposal of this run holds the theory"
	}
	return fmt.Sprintf("open prediction #%d holds the theory", n)
}

// supersedable returns n when it is an open prediction of the predictor
// itself, else 0: a proposal never closes someone else's issue.
func supersedable(n int64, h History) int64 {
	if n <= 0 {
		return 0
	}
	for _, i := range h.Open {
		if i.Number == n && strings.EqualFold(i.Author, h.Me) {
			return n
		}
	}
	return 0
}

// duplicate reports the open prediction (or, as 0, the earlier proposal
// of this run) holding p's theory; the prediction p supersedes does not
// count.
func duplicate(p Proposal, open []forge.Issue, except int64, filed []Proposal) (int64, bool) {
	for _, i := range open {
		if i.Number != except && same(p.Title, p.Theory, i.Title, TheoryOf(i.Body)) {
			return i.Number, true
		}
	}
	for _, f := range filed {
		if same(p.Title, p.Theory, f.Title, f.Theory) {
			return 0, true
		}
	}
	return 0, false
}

// matches returns the issue of issues holding p's theory.
func matches(p Proposal, issues []forge.Issue) (int64, bool) {
	for _, i := range issues {
		if same(p.Title, p.Theory, i.Title, TheoryOf(i.Body)) {
			return i.Number, true
		}
	}
	return 0, false
}

// same reports whether two predictions hold one theory: equal normalised
// titles, or theories sharing most of their words.
func same(title, theory, otherTitle, otherTheory string) bool {
	if t := Normalise(title); t != "" && t == Normalise(otherTitle) {
		return true
	}
	return otherTheory != "" && Similarity(theory, otherTheory) >= similarTheory
}

// Normalise lowercases s and keeps its letters and digits, one space
// between words.
func Normalise(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}

// stopwords carry no theory.
var stopwords = map[string]bool{"the": true, "and": true, "for": true, "that": true, "this": true, "with": true,
	"are": true, "was": true, "not": true, "has": true, "have": true, "its": true, "from": true, "but": true,
	"will": true, "can": true, "any": true, "into": true, "than": true, "been": true, "only": true}

// words returns the set of s's words of three letters or more, minus
// stopwords.
func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(Normalise(s)) {
		if len(w) >= 3 && !stopwords[w] {
			out[w] = true
		}
	}
	return out
}

// Similarity is the Jaccard index of the word sets of a and b (0 when
// either has none).
func Similarity(a, b string) float64 {
	wa, wb := words(a), words(b)
	if len(wa) == 0 || len(wb) == 0 {
		return 0
	}
	common := 0
	for w := range wa {
		if wb[w] {
			common++
		}
	}
	return float64(common) / float64(len(wa)+len(wb)-common)
}

// theoryRe finds the theory line of a prediction body.
var theoryRe = regexp.MustCompile(`(?m)^\*\*Theory:\*\*\s*(.+)$`)

// TheoryOf returns the theory of a prediction body ("" when it has none).
func TheoryOf(body string) string {
	m := theoryRe.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(m[1])
}

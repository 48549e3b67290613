package gardener

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/deps"
	"github.com/disinto/disinto/lib/forge"
)

// Thresholds of the deterministic checks (spec 30 §4, §11).
const (
	duplicateOverlap = 0.6
	staleAfter       = 14 * 24 * time.Hour
)

var (
	checkboxRe      = regexp.MustCompile(`(?m)^\s*[-*] \[[ xX]\]`)
	pathRe          = regexp.MustCompile("(?:^|[\\s`(])([A-Za-z0-9_.-]+/(?:[A-Za-z0-9_.-]+/?)*|[A-Za-z0-9_-]+\\.[a-z]{1,5})(?:$|[\\s`),:])")
	decomposedRe    = regexp.MustCompile(`(?i)Decomposed from #(\d+)\b`)
	reproRe         = regexp.MustCompile(`(?im)(steps to reproduce|^\s*1[.)]\s+\S[\s\S]*^\s*2[.)]\s+\S)`)
	titlePrefixRe   = regexp.MustCompile(`^(?i)(feat|fix|refactor|chore|docs|bug|test)(\([^)]*\))?:\s*`)
	nonWordRe       = regexp.MustCompile(`[^a-z0-9]+`)
	affectedFilesRe = regexp.MustCompile(`(?is)#{1,3}\s*affected files\s*\n(.*?)(?:\n#{1,3}\s|\z)`)
)

// hasCriteria reports acceptance criteria: at least one checkbox.
func hasCriteria(body string) bool { return checkboxRe.MatchString(body) }

// hasAffectedFiles reports an "Affected files" section naming at least
// one path.
func hasAffectedFiles(body string) bool {
	m := affectedFilesRe.FindStringSubmatch(body)
	if m == nil {
		return false
	}
	return pathRe.MatchString(m[1])
}

// missingSections lists what the quality gate finds missing from body, in
// the order the gate's comment names them.
func missingSections(body string) []string {
	var out []string
	if !hasCriteria(body) {
		out = append(out, "acceptance criteria")
	}
	if !hasAffectedFiles(body) {
		out = append(out, "affected files")
	}
	return out
}

// tracker is the fully paginated state of the issues.
type tracker struct {
	all  []forge.Issue
	byN  map[int64]forge.Issue
	open []forge.Issue
}

func newTracker(all []forge.Issue) *tracker {
	t := &tracker{all: all, byN: map[int64]forge.Issue{}}
	sort.Slice(t.all, func(i, j int) bool { return t.all[i].Number < t.all[j].Number })
	for _, i := range t.all {
		t.byN[i.Number] = i
		if i.State == forge.StateOpen {
			t.open = append(t.open, i)
		}
	}
	return t
}

func (t *tracker) isOpen(n int64) bool {
	i, ok := t.byN[n]
	return ok && i.State == forge.StateOpen
}

// starving returns the open issues that some open backlog issue depends
// on and that are not in the backlog themselves: the dev agent can never
// start their dependants (spec 30 §4.5). In issue order.
func (t *tracker) starving() []forge.Issue {
	seen := map[int64]bool{}
	var out []forge.Issue
	for _, i := range t.open {
		if !i.HasLabel(forge.LabelBacklog) {
			continue
		}
		for _, d := range deps.ParseFor(i.Number, i.Body) {
			b, ok := t.byN[d]
			if !ok || b.State != forge.StateOpen || b.HasLabel(forge.LabelBacklog) || seen[d] {
				continue
			}
			seen[d] = true
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

// gateFailures returns the open backlog issues missing acceptance
// criteria or affected files, with what is missing.
func (t *tracker) gateFailures() map[int64][]string {
	out := map[int64][]string{}
	for _, i := range t.open {
		if !i.HasLabel(forge.LabelBacklog) {
			continue
		}
		if miss := missingSections(i.Body); len(miss) > 0 {
			out[i.Number] = miss
		}
	}
	return out
}

// gateComment is the quality gate's comment on issue n.
func gateComment(missing []string) string {
	return fmt.Sprintf("This issue left the backlog: it is missing %s. "+
		"Please use the issue templates under `.forgejo/ISSUE_TEMPLATE/`: an `## Acceptance criteria` section with "+
		"`- [ ]` checkboxes and an `## Affected files` section naming the files, then label it `backlog` again.",
		strings.Join(missing, ", "))
}

// parentClosure is a parent whose sub-issues are all closed.
type parentClosure struct {
	Parent forge.Issue
	Subs   []forge.Issue
}

// closable returns the open parents whose every sub-issue ("Decomposed
// from #N" with a word boundary) is closed, except a parent in the
// bug-report track whose verification is pending (bug-report with
// in-progress, spec 30 §13.10).
func (t *tracker) closable() []parentClosure {
	subs := map[int64][]forge.Issue{}
	for _, i := range t.all {
		for _, m := range decomposedRe.FindAllStringSubmatch(i.Body, -1) {
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil || n == i.Number {
				continue
			}
			subs[n] = append(subs[n], i)
		}
	}
	var out []parentClosure
	for _, p := range t.open {
		ss := subs[p.Number]
		if len(ss) == 0 {
			continue
		}
		if p.HasLabel(forge.LabelBugReport) && p.HasLabel(forge.LabelInProgress) {
			continue
		}
		all := true
		for _, s := range ss {
			if s.State == forge.StateOpen {
				all = false
			}
		}
		if all {
			out = append(out, parentClosure{Parent: p, Subs: ss})
		}
	}
	return out
}

// closureComment lists the resolved sub-issues of a parent.
func closureComment(pc parentClosure) string {
	var b strings.Builder
	b.WriteString("All sub-issues decomposed from this issue are closed:\n\n")
	for _, s := range pc.Subs {
		fmt.Fprintf(&b, "- #%d %s\n", s.Number, forge.Neutralise(s.Title))
	}
	b.WriteString("\nClosing it: all decomposed work is complete.")
	return b.String()
}

// titleWords normalises a title into its set of words.
func titleWords(title string) map[string]bool {
	t := titlePrefixRe.ReplaceAllString(strings.ToLower(strings.TrimSpace(title)), "")
	out := map[string]bool{}
	for _, w := range strings.Fields(nonWordRe.ReplaceAllString(t, " ")) {
		out[w] = true
	}
	return out
}

// overlap is the share of the smaller title's words the other shares.
func overlap(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return float64(n) / float64(len(a))
}

// duplicates returns pairs [older, newer] of open issues whose titles
// overlap by more than the threshold: flagged, never closed without
// reading both (that is judgement).
func (t *tracker) duplicates() [][2]int64 {
	words := make([]map[string]bool, len(t.open))
	for i, is := range t.open {
		words[i] = titleWords(is.Title)
	}
	var out [][2]int64
	for i := range t.open {
		for j := i + 1; j < len(t.open); j++ {
			if overlap(words[i], words[j]) > duplicateOverlap {
				out = append(out, [2]int64{t.open[i].Number, t.open[j].Number})
			}
		}
	}
	return out
}

// stale returns the open issues not updated for staleAfter (flagged).
func (t *tracker) stale(now time.Time) []int64 {
	var out []int64
	for _, i := range t.open {
		if now.Sub(i.Updated) >= staleAfter {
			out = append(out, i.Number)
		}
	}
	return out
}

// bugCandidates are open issues outside every workflow whose body
// carries reproduction steps: the model decides bug or feature.
func (t *tracker) bugCandidates() []forge.Issue {
	skip := []forge.LabelName{forge.LabelBacklog, forge.LabelBugReport, forge.LabelInProgress, forge.LabelBlocked,
		forge.LabelUnderspecified, forge.LabelVision, forge.LabelTechDebt}
	var out []forge.Issue
	for _, i := range t.open {
		if hasLabelIn(i, skip) || !reproRe.MatchString(i.Body) {
			continue
		}
		out = append(out, i)
	}
	return out
}

// techDebt are the open tech-debt issues, not in the backlog.
func (t *tracker) techDebt() []forge.Issue {
	var out []forge.Issue
	for _, i := range t.open {
		if i.HasLabel(forge.LabelTechDebt) && !i.HasLabel(forge.LabelBacklog) && !i.HasLabel(forge.LabelInProgress) {
			out = append(out, i)
		}
	}
	return out
}

func hasLabelIn(i forge.Issue, names []forge.LabelName) bool {
	for _, n := range names {
		if i.HasLabel(n) {
			return true
		}
	}
	return false
}

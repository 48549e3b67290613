package predictor

import (
	"errors"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

func codes(ds []Decision) string {
	var out []string
	for _, d := range ds {
		c := string(d.Code)
		if c == "" {
			c = "file"
		}
		out = append(out, c)
	}
	return strings.Join(out, ",")
}

// TestDecide: the rules in order, as a table.
func TestDecide(t *testing.T) {
	open := []forge.Issue{
		{Number: 1, Title: "Evidence for launch objective is thin", Body: "**Theory:** nothing backs the launch", Author: "predictor-bot"},
		{Number: 2, Title: "Someone's", Body: "**Theory:** a human theory about quotas", Author: "owner"},
	}
	dismissed := []forge.Issue{{Number: 3, Title: "Backups never restored", Body: "**Theory:** nobody restored a backup"}}
	h := History{Open: open, Dismissed: dismissed, Me: "predictor-bot"}
	formulas := map[string]bool{"run-red-team": true}
	x := func(title, theory string) Proposal { return explore(title, theory) }
	xp := func(title, theory, f string) Proposal { return exploit(title, theory, f) }
	refile := x("Restores", "nobody restored a backup")
	refile.Dismissed, refile.NewEvidence = 3, "the job fails"
	wrongRef := refile
	wrongRef.Dismissed = 9
	sup := x("Evidence for launch objective is thin", "nothing backs the launch, sharper")
	sup.Supersedes = 1
	cases := []struct {
		name  string
		props []Proposal
		want  string
	}{
		{"five explores", []Proposal{x("a", "aaa one"), x("b", "bbb two"), x("c", "ccc three"), x("d", "ddd four"), x("e", "eee five")}, "file,file,file,file,file"},
		{"six explores", []Proposal{x("a", "aaa one"), x("b", "bbb two"), x("c", "ccc three"), x("d", "ddd four"), x("e", "eee five"), x("f", "fff six")}, "file,file,file,file,file,predict.over_budget"},
		{"exploit then explores", []Proposal{xp("a", "aaa one", "run-red-team"), x("b", "bbb two"), x("c", "ccc three"), x("d", "ddd four"), x("e", "eee five")}, "file,file,file,file,predict.over_budget"},
		{"an explore fits after an exploit that does not", []Proposal{x("a", "aaa one"), x("b", "bbb two"), xp("c", "ccc three", "run-red-team"), xp("d", "ddd four", "run-red-team"), x("e", "eee five")}, "file,file,file,predict.over_budget,file"},
		{"unknown formula costs nothing", []Proposal{xp("a", "aaa one", "run-nope"), x("b", "bbb two")}, "vault.invalid_formula,file"},
		{"duplicate title", []Proposal{x("EVIDENCE for launch objective is thin.", "other")}, "predict.duplicate"},
		{"duplicate theory", []Proposal{x("other", "Nothing backs the launch")}, "predict.duplicate"},
		{"duplicate within the run", []Proposal{x("q", "queue loss on restart"), x("q!", "different")}, "file,predict.duplicate"},
		{"dismissed without evidence", []Proposal{x("Restores", "nobody restored a backup")}, "predict.no_new_evidence"},
		{"dismissed naming another issue", []Proposal{wrongRef}, "predict.no_new_evidence"},
		{"dismissed with new evidence", []Proposal{refile}, "file"},
		{"superseding its own duplicate", []Proposal{sup}, "file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := codes(Decide(c.props, h, formulas)); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
	if d := Decide([]Proposal{sup}, h, formulas); d[0].Supersedes != 1 {
		t.Error("own prediction not superseded")
	}
	other := x("z", "zzz")
	other.Supersedes = 2
	if d := Decide([]Proposal{other}, h, formulas); d[0].Supersedes != 0 {
		t.Error("someone else's prediction superseded")
	}
}

// TestParseProposals: the schema and the per-proposal rules.
func TestParseProposals(t *testing.T) {
	if _, _, err := ParseProposals([]byte(`{"proposals": [], "labels": []}`)); !errors.Is(err, ErrProposal) {
		t.Errorf("unknown field: %v", err)
	}
	if _, _, err := ParseProposals([]byte(`not json`)); !errors.Is(err, ErrProposal) {
		t.Errorf("not json: %v", err)
	}
	ok := explore("t", "th")
	bad := map[string]func(p *Proposal){
		"kind":             func(p *Proposal) { p.Kind = "feature" },
		"explore high":     func(p *Proposal) { p.Confidence = "high" },
		"exploit low":      func(p *Proposal) { p.Kind, p.Confidence, p.Formula, p.Focus = Exploit, "low", "run-x", "f" },
		"exploit no focus": func(p *Proposal) { p.Kind, p.Confidence, p.Formula = Exploit, "high", "run-x" },
		"formula name":     func(p *Proposal) { p.Kind, p.Confidence, p.Formula, p.Focus = Exploit, "high", "../x", "f" },
		"two-line title":   func(p *Proposal) { p.Title = "a\nb" },
		"no theory":        func(p *Proposal) { p.Theory = " " },
		"marker":           func(p *Proposal) { p.Observation = "<!-- disinto:claim -->" },
		"long":             func(p *Proposal) { p.Observation = strings.Repeat("x", maxText+1) },
		"dismissed bare":   func(p *Proposal) { p.Dismissed = 4 },
	}
	for name, mut := range bad {
		p := ok
		mut(&p)
		if err := p.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	got, refused, err := ParseProposals([]byte(`{"proposals": [{"kind": "explore", "title": " t ", "observation": "o", "theory": "th", "confidence": "low", "evidence_checked": "e", "suggested_action": "s"}, {"kind": "nope"}]}`))
	if err != nil || len(got.Proposals) != 1 || len(refused) != 1 || got.Proposals[0].Title != "t" {
		t.Errorf("%+v %v %v", got, refused, err)
	}
}

// TestBody: the protocol's shape, and no marker from the model.
func TestBody(t *testing.T) {
	p := exploit("t", "theory <!-- x", "run-red-team")
	p.Dismissed, p.NewEvidence = 3, "new"
	b := Body(p, 7)
	for _, want := range []string{"\n\n---\n**Theory:** theory &lt;!-- x\n**Confidence:** high\n**Evidence checked:** ",
		"\n**Suggested action:** ", "**Exploit:** a vault request runs `run-red-team`", "**Re-files:** #3 (dismissed)\n**New evidence:** new\n", "**Supersedes:** #7\n"} {
		if !strings.Contains(b, want) {
			t.Errorf("body lacks %q:\n%s", want, b)
		}
	}
	if TheoryOf(b) != "theory &lt;!-- x" {
		t.Errorf("theory %q", TheoryOf(b))
	}
	q := VaultRequestOf(p, 12)
	if q.ID != "predict-12-run-red-team" || q.Formula != "run-red-team" || len(q.Secrets) != 0 || q.Secrets == nil ||
		!strings.HasPrefix(q.Context, "Test prediction #12: ") {
		t.Errorf("%+v", q)
	}
}

// TestCodes are well formed.
func TestCodes(t *testing.T) {
	for _, c := range []ledger.Code{CodeInvalidFormula, CodeOverBudget, CodeDuplicate, CodeNoNewEvidence} {
		if err := c.Validate(); err != nil {
			t.Error(err)
		}
	}
}

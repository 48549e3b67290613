package planner

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/graph"
)

func TestBudget(t *testing.T) {
	for _, tt := range []struct{ triaged, want int }{{0, 4}, {1, 4}, {2, 4}, {3, 4}, {4, 5}, {9, 10}} {
		if got := Budget(tt.triaged); got != tt.want {
			t.Errorf("Budget(%d) = %d, want %d", tt.triaged, got, tt.want)
		}
	}
	for n := 0; n < 20; n++ {
		if Budget(n+1) < Budget(n) {
			t.Fatalf("the budget falls from %d to %d triaged", n, n+1)
		}
	}
}

func TestParsePlan(t *testing.T) {
	tests := []struct {
		name, in string
		// whole is a part of the error refusing the plan whole; parts the
		// number of parts refused alone.
		whole string
		parts int
	}{
		{"empty", `{}`, "", 0},
		{"unknown top-level key", `{"labels": []}`, `unknown field "labels"`, 0},
		{"unknown nested key", `{"issues": [{"ref": "a", "kind": "vision", "title": "t", "problem": "p", "why_vision": "w", "owner": "x"}]}`, `unknown field "owner"`, 0},
		{"two values", `{} {}`, "more than one JSON value", 0},
		{"not an object", `[]`, "cannot unmarshal", 0},
		{"bad kind", `{"issues": [{"ref": "a", "kind": "action", "title": "t", "problem": "p"}]}`, "", 1},
		{"backlog without template", `{"issues": [{"ref": "a", "kind": "backlog", "title": "t", "problem": "p", "proposed_solution": "s", "affected_files": ["a"], "acceptance_criteria": ["c"]}]}`, "", 1},
		{"duplicate ref", `{"issues": [{"ref": "a", "kind": "vision", "title": "t", "problem": "p", "why_vision": "w"}, {"ref": "a", "kind": "vision", "title": "u", "problem": "p", "why_vision": "w"}]}`, "", 1},
		{"marker in a text", `{"issues": [{"ref": "a", "kind": "vision", "title": "t", "problem": "<!-- disinto:claim -->", "why_vision": "w"}]}`, "", 1},
		{"dismiss with follow-up", `{"triage": [{"prediction": 3, "decision": "dismiss", "reasoning": "r", "follow_up": "a"}]}`, "", 1},
		{"action without follow-up", `{"triage": [{"prediction": 3, "decision": "action", "reasoning": "r"}]}`, "", 1},
		{"no reasoning", `{"triage": [{"prediction": 3, "decision": "dismiss", "reasoning": " "}]}`, "", 1},
		{"bad status", `{"tree": {"objectives": [{"name": "L", "status": "WATCHING", "prerequisites": []}]}}`, "", 1},
		{"empty tree", `{"tree": {"objectives": []}}`, "", 1},
		{"two-line prerequisite", `{"tree": {"objectives": [{"name": "L", "status": "DONE", "prerequisites": [{"text": "a\nb", "done": true}]}]}}`, "", 1},
		{"bad slug", `{"procurement": [{"slug": "Git Hub", "title": "t", "what": "w", "why": "y", "human_action": ["a"], "factory_will": "f"}]}`, "", 1},
		{"six priorities", `{"priority": [{"issue": 1}, {"issue": 2}, {"issue": 3}, {"issue": 4}, {"issue": 5}, {"issue": 6}]}`, "", 1},
		{"memory with a marker", `{"memory": "<!-- summarized-through-run: 99 -->"}`, "", 1},
		{"memory too long", fmt.Sprintf(`{"memory": %q}`, strings.Repeat("line\n", 120)), "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, refused, err := ParsePlan([]byte(tt.in))
			if tt.whole != "" {
				if err == nil || !strings.Contains(err.Error(), tt.whole) || !errors.Is(err, ErrPlan) || !strings.HasPrefix(err.Error(), PlanFile+": ") {
					t.Fatalf("err %v, want one naming %s and %q", err, PlanFile, tt.whole)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(refused) != tt.parts {
				t.Fatalf("refused %v, want %d", refused, tt.parts)
			}
			for _, e := range refused {
				if !errors.Is(e, ErrPlan) || strings.Contains(e.Error(), "\n") {
					t.Errorf("refusal %q is not one line wrapping ErrPlan", e)
				}
			}
		})
	}
}

func TestDecide(t *testing.T) {
	open := []forge.Issue{{Number: 1, Title: "Wire the metrics!"}, {Number: 7, Title: "A prediction"}, {Number: 8, Title: "Another"}}
	tr := Tracker{Open: open, Predictions: open[1:]}
	vision := func(ref, title string) Proposal {
		return Proposal{Ref: ref, Kind: Vision, Title: title, Problem: "p", WhyVision: "w"}
	}
	p := Plan{
		Triage: []Triage{
			{Prediction: 7, Decision: Action, Reasoning: "r", FollowUp: "f"},
			{Prediction: 7, Decision: Dismiss, Reasoning: "twice"},
			{Prediction: 1, Decision: Dismiss, Reasoning: "not a prediction"},
			{Prediction: 8, Decision: Action, Reasoning: "r", FollowUp: "dup"},
		},
		Issues: []Proposal{vision("a", "A"), vision("dup", "wire the METRICS"), vision("b", "B"), vision("c", "C"),
			vision("d", "D"), vision("f", "Follow-up"), vision("e", "E"), vision("a2", "a")},
	}
	d := Decide(p, tr)
	if d.Budget != 4 || len(d.Triage) != 2 {
		t.Fatalf("budget %d, %d triaged", d.Budget, len(d.Triage))
	}
	var titles []string
	for _, f := range d.File {
		titles = append(titles, f.Title)
	}
	if got := strings.Join(titles, ","); got != "Follow-up,A,B,C" {
		t.Errorf("filed %s, want the follow-up first, then in order", got)
	}
	if d.Existing["dup"] != 1 {
		t.Errorf("the duplicate follow-up does not name #1: %v", d.Existing)
	}
	codes := map[string]int{}
	for _, r := range d.Refused {
		codes[string(r.Code)]++
	}
	if codes[string(CodeNotOpen)] != 2 || codes[string(CodeDuplicate)] != 2 || codes[string(CodeOverBudget)] != 2 {
		t.Errorf("refusals %v", d.Refused)
	}
}

func TestGate(t *testing.T) {
	p := Proposal{Ref: "a", Kind: Backlog, Template: "feature", Title: "t", Problem: "p", Solution: "s",
		AffectedFiles: []string{"a", "b", "c"}, Acceptance: []string{"1", "2", "3", "4", "5"}}
	if g := Gate(p); g.Kind != Backlog {
		t.Fatal("a proposal within the limits was gated")
	}
	p.Acceptance = append(p.Acceptance, "6")
	if g := Gate(p); g.Kind != Vision || !strings.Contains(g.WhyVision, "6 acceptance criteria") {
		t.Errorf("gated %+v", g)
	}
	body := Body(Gate(p), 0)
	if !strings.Contains(body, "## Why vision") || strings.Contains(body, "## Acceptance criteria") {
		t.Errorf("vision body:\n%s", body)
	}
}

// TestRenderRoundTrip is spec 40 §2.10 scenario 11 at the unit level:
// the rendered tree parses back, objective by objective, with lib/graph's
// parser.
func TestRenderRoundTrip(t *testing.T) {
	tree := &Tree{Objectives: []Objective{
		{Name: "Launch", Issue: 10, Status: "BLOCKED", Reason: "metrics", Prerequisites: []Prereq{
			{Text: "Site live", Done: true, Issue: 11}, {Text: "Metrics wired", Ref: "m"}, {Text: "Org", Procurement: "github-org"}}},
		{Name: "Grow", Status: "DONE"},
	}}
	if err := tree.Validate(); err != nil {
		t.Fatal(err)
	}
	text := tree.Render("proj", time.Date(2026, 4, 15, 23, 0, 0, 0, time.UTC), func(string) int64 { return 42 })
	if err := tree.checkRoundTrip(text); err != nil {
		t.Fatalf("%v:\n%s", err, text)
	}
	got := graph.ParseTree(text)
	if got[0].Prereqs[1].Issues[0] != 42 || !strings.Contains(got[0].Prereqs[2].Text, "blocked-on-vault (vault/pending/proj-github-org.md)") {
		t.Errorf("parsed %+v", got[0].Prereqs)
	}
	bad := &Tree{Objectives: []Objective{{Name: "Launch (#3)", Status: "DONE"}}}
	if err := bad.checkRoundTrip(bad.Render("proj", time.Now(), nil)); err == nil {
		t.Error("a name that parses as an issue suffix passed the round trip")
	}
}

func TestMemoryDue(t *testing.T) {
	none := &opsView{}
	if !none.memoryDue(1) {
		t.Error("no memory: not due")
	}
	v := &opsView{memory: memoryText(1, time.Now(), "x")}
	for run, want := range map[int]bool{2: false, 5: false, 6: true, 9: true} {
		if got := v.memoryDue(run); got != want {
			t.Errorf("run %d after a summary at 1: due %t", run, got)
		}
	}
}

func TestRequestBody(t *testing.T) {
	q := Procurement{Slug: "s", Title: "T", What: "w", Why: "y", HumanAction: []string{"do it", "Paste the token into the issue"},
		FactoryWill: "f", Unblocks: []int64{4}}
	b := RequestBody(q, func(int64) string { return "Four" })
	if strings.Count(b, "Paste") != 1 || !strings.Contains(b, "- #4 — Four") || !strings.Contains(b, "2. Paste the token") {
		t.Errorf("body:\n%s", b)
	}
}

// TestFormulaStatesTheSchema: the shipped formula names the outbox and
// every key of the plan and of its parts, so the prompt and the decoder
// that refuses unknown keys cannot drift apart.
func TestFormulaStatesTheSchema(t *testing.T) {
	f, err := formula.Load(formulas.FS, FormulaName)
	if err != nil {
		t.Fatal(err)
	}
	text := f.Text()
	if !strings.Contains(text, "$"+EnvPlan) || f.Model != "opus" {
		t.Errorf("the formula does not name $%s or is not opus (%q)", EnvPlan, f.Model)
	}
	for _, v := range []any{Plan{}, Tree{}, Objective{}, Prereq{}, Triage{}, Proposal{}, IssueRef{}, Procurement{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			key, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if !strings.Contains(text, `"`+key+`"`) && !strings.Contains(text, "`"+key+"`") {
				t.Errorf("the formula does not state %s.%s (%q)", rt.Name(), rt.Field(i).Name, key)
			}
		}
	}
	for _, d := range []string{string(Action), string(Dismiss), string(Backlog), string(Vision), "READY", "BLOCKED", "DONE"} {
		if !strings.Contains(text, d) {
			t.Errorf("the formula does not state %q", d)
		}
	}
}

package review

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formula/formulatest"
	"github.com/disinto/disinto/lib/logx"
)

// TestPromptHasLessonsAndTheLiveFormula: the review prompt is rendered
// from the formula in force, and the bot's lessons reach it fenced.
func TestPromptHasLessonsAndTheLiveFormula(t *testing.T) {
	f, err := formula.Load(formulas.FS, "review-pr")
	if err != nil {
		t.Fatal(err)
	}
	live := *f
	live.Description = "LIVE-OVERRIDE " + f.Description
	a := &Agent{opts: Options{Project: &config.Project{Name: "p", Repo: "o/p", ForgeURL: "http://forge:3000"},
		Formula: f, DiffLimit: DefaultDiffLimit, Checkout: primaryOnly{fsys: fstest.MapFS{}},
		LiveFormula: func() *formula.Formula { return &live },
		Lessons:     func(context.Context) string { return "- LESSON: ## Review output\n" }}}
	p := promptInput{c: candidate{pr: forge.PullRequest{Number: 3, Title: "t", HeadSHA: sha2}}, diff: "diff --git a/x b/x\n"}
	full, err := a.fullPrompt(t.Context(), p, "/tmp/out.json", logx.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(full, "LIVE-OVERRIDE") || !strings.Contains(full, "- LESSON:") {
		t.Fatalf("the prompt lacks the live formula or the lessons:\n%s", full)
	}
	for _, l := range formulatest.OutsideFences(full) {
		if strings.Contains(l, "LESSON:") {
			t.Errorf("a lesson outside a fence: %q", l)
		}
	}
}

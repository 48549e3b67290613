package review

import (
	"context"
	"slices"
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

// TestPromptHasAffectedObjectives: the structural graph is asked about
// the files the pull request changes, and its answer reaches the prompt
// fenced; without a graph the section is empty and the prompt renders.
func TestPromptHasAffectedObjectives(t *testing.T) {
	f, err := formula.Load(formulas.FS, "review-pr")
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	a := &Agent{opts: Options{Project: &config.Project{Name: "p", Repo: "o/p", ForgeURL: "http://forge:3000"},
		Formula: f, DiffLimit: DefaultDiffLimit, Checkout: primaryOnly{fsys: fstest.MapFS{}},
		Objectives: func(_ context.Context, files []string) string {
			asked = files
			return "Affected objectives: objective:launch\nAlert: prereq:site-live: PR modifies file tracing to a DONE prerequisite\n"
		}}}
	p := promptInput{c: candidate{pr: forge.PullRequest{Number: 3, Title: "t", HeadSHA: sha2}},
		diff: "diff --git a/docker-compose.yml b/docker-compose.yml\n--- a/docker-compose.yml\n+++ b/docker-compose.yml\n@@ -1 +1 @@\n-a\n+b\n"}
	full, err := a.fullPrompt(t.Context(), p, "/tmp/out.json", logx.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{"docker-compose.yml"}) {
		t.Errorf("the graph was asked about %q", asked)
	}
	if !strings.Contains(full, "objective:launch") || !strings.Contains(full, "tracing to a DONE prerequisite") {
		t.Fatalf("the prompt lacks the affected objectives:\n%s", full)
	}
	for _, l := range formulatest.OutsideFences(full) {
		if strings.Contains(l, "objective:launch") {
			t.Errorf("graph text outside a fence: %q", l)
		}
	}
	a.opts.Objectives = nil
	bare, err := a.fullPrompt(t.Context(), p, "/tmp/out.json", logx.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(bare, "objective:launch") || strings.Contains(bare, "{{affected_objectives}}") {
		t.Errorf("without a graph the section should be empty:\n%s", bare)
	}
}

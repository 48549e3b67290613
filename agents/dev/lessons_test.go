package dev

import (
	"context"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formula/formulatest"
)

// TestPromptHasLessonsAndTheLiveFormula: a session's first prompt comes
// from the formula in force when it starts, with the bot's lessons fenced.
func TestPromptHasLessonsAndTheLiveFormula(t *testing.T) {
	h := newHarness(t, func(h *harness, _ int, inv claude.Invocation) (claude.Result, error) {
		return claude.Result{}, nil
	})
	live := *h.a.o.Formula
	live.Description = "LIVE-OVERRIDE " + live.Description
	h.a.o.LiveFormula = func() *formula.Formula { return &live }
	h.a.o.Lessons = func(context.Context) string { return "- LESSON: ## Phase protocol\n" }
	h.f.addIssue("Add a widget", "Add it.", forge.LabelBacklog)
	h.tick()
	calls := h.r.Calls()
	if len(calls) == 0 {
		t.Fatal("no session")
	}
	prompt := calls[0].Prompt
	if !strings.Contains(prompt, "LIVE-OVERRIDE") || !strings.Contains(prompt, "- LESSON:") {
		t.Fatalf("the prompt lacks the live formula or the lessons:\n%s", prompt)
	}
	for _, l := range formulatest.OutsideFences(prompt) {
		if strings.Contains(l, "LESSON:") {
			t.Errorf("a lesson outside a fence: %q", l)
		}
	}
}

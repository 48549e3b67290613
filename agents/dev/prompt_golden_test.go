package dev

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/text"
)

// goldenPrompt compares got with testdata/golden/<name>.golden, which
// -update rewrites.
func goldenPrompt(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./agents/dev -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("prompt differs from %s (rerun with -update and review the diff):\n%s", path, got)
	}
}

// normalise replaces what differs between runs (temporary directories)
// with fixed words.
func normalise(h *harness, s string) string {
	s = strings.ReplaceAll(s, h.data, "$DATA")
	return regexp.MustCompile(`/tmp/[^\s"']*`).ReplaceAllString(s, "$$TMP")
}

// renderFollowup renders follow-up name as the agent does for st, with
// the values its caller gives; a follow-up without a caller known here
// renders with its variables named, so it is pinned all the same.
func renderFollowup(t *testing.T, h *harness, st *State, name string) string {
	t.Helper()
	var (
		out string
		err error
	)
	switch name {
	case followNudge, followRestart:
		out, err = h.a.followup(name, nil)
	case followResume:
		out, err = h.a.resumePrompt(t.Context(), st)
	case followCIFailed:
		out, err = h.a.ciNews(st, "- ci/test: failure: go test ./... failed (http://ci.invalid/pipeline/7)\n")
	case followChanges:
		out, err = h.a.reviewNews(st, "Please handle the empty input; see review comment on widget.go:12.")
	case followNoProgress:
		out, err = h.a.followup(name, map[string]string{"pr": fmt.Sprint(st.PR), "head": text.ShortSHA(st.HeadSHA)})
	case followRebase:
		out, err = h.a.rebaseNews(st, "it conflicts with main", "git rebase stopped on conflicts in README.md")
	default:
		vals := map[string]string{}
		for _, v := range followupVars()[name] {
			vals[v] = "<" + v + ">"
		}
		out, err = h.a.followup(name, vals)
	}
	if err != nil {
		t.Fatalf("render %s: %v", name, err)
	}
	return out
}

// TestGoldenFollowups pins every follow-up the agent resumes sessions
// with, rendered with the values the agent gives it (fences included).
func TestGoldenFollowups(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Add a widget", "Please add a widget.", forge.LabelBacklog)
	if _, err := h.f.fake.Repo("owner", "proj", "alice").CreateComment(t.Context(), n, "Use the blue one."); err != nil {
		t.Fatal(err)
	}
	st := State{Issue: n, Title: "Add a widget", Branch: "fix/issue-1", PR: 2, HeadSHA: "0123456789abcdef0123",
		CIFixes: 1, ReviewRounds: 2, Rebases: 1}
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range followupVars() {
			if !yield(name) {
				return
			}
		}
	})
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			goldenPrompt(t, "followup-"+name, normalise(h, renderFollowup(t, h, &st, name)))
		})
	}
}

// TestGoldenFirstPromptWithPriorArt pins the first prompt of a fresh
// attempt, with the abandoned pull request as prior art.
func TestGoldenFirstPromptWithPriorArt(t *testing.T) {
	h := newHarness(t, pushing)
	n := h.f.addIssue("Add a widget", "Please add a widget.", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	if err := h.f.bot.SetPullDiff(st.PR, "diff --git a/widget.go b/widget.go\n--- a/widget.go\n+++ b/widget.go\n@@ -1 +1,2 @@\n package widget\n+var cache = map[string]int{}\n"); err != nil {
		t.Fatal(err)
	}
	h.f.review(st.PR, "review-bot", forge.ReviewRequestChanges, "The cache is the wrong place for this.")
	abandon(t, h, n, st.PR)
	h.tick()
	calls := h.r.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d sessions", len(calls))
	}
	goldenPrompt(t, "first-prompt-prior-art", normalise(h, calls[1].Prompt))
}

// TestFormulaPromisesAreKept: where the dev formula tells the model that
// a section is "shown above", the agent must render that section when it
// applies. A promise without a renderer is how prior art went missing.
func TestFormulaPromisesAreKept(t *testing.T) {
	raw, err := formulas.FS.ReadFile("dev.toml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ToLower(string(raw))
	h := newHarness(t, pushing)
	n := h.f.addIssue("Add a widget", "Please add a widget.", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.f.review(st.PR, "review-bot", forge.ReviewRequestChanges, "Not like this.")
	abandon(t, h, n, st.PR)
	h.tick()
	calls := h.r.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d sessions", len(calls))
	}
	first := calls[1].Prompt
	cur, _ := h.state(n)
	ci := renderFollowup(t, h, &cur, followCIFailed)
	for _, p := range []struct {
		promise string // what the formula says, lower case
		prompt  string // the prompt that must keep it
		section string // what that prompt must then hold
	}{
		{"prior art", first, "## " + priorArtTitle},
		{"ci failed (with its log)", ci, "go test ./... failed"},
	} {
		if !strings.Contains(text, p.promise) {
			continue // the formula no longer promises it
		}
		if !strings.Contains(p.prompt, p.section) {
			t.Errorf("the dev formula promises %q, but the prompt lacks %q", p.promise, p.section)
		}
	}
	if !strings.Contains(text, "prior art") {
		t.Error("the dev formula no longer mentions prior art: update this test with what replaced it")
	}
}

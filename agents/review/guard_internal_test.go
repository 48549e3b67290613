package review

import (
	"reflect"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/testguard"
	"github.com/disinto/disinto/lib/verdict"
)

func TestLinkedIssues(t *testing.T) {
	tests := []struct {
		name string
		body string
		fork bool
		want []int64
	}{
		{"dev agent's body: the marker wins over text the session wrote", "Fixes #4\n\n## Changes\n\nAlso closes #9.\n\n" + forge.RefMarker(forge.RefDisintoIssue, "4"), false, []int64{4}},
		{"a fork's marker is not read", "Fixes #4\n\n" + forge.RefMarker(forge.RefDisintoIssue, "9"), true, []int64{4}},
		{"closing keywords", "Fixes #3, resolves #5 and closes #3 again; see #8.", false, []int64{3, 5}},
		{"a reference to itself", "Closes #7", false, nil},
		{"nothing", "Refactors the parser.", false, nil},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			if got := linkedIssues(forge.PullRequest{Number: 7, Author: "dev-bot", FromFork: c.fork, Body: c.body}); !reflect.DeepEqual(got, c.want) {
				t.Errorf("linkedIssues = %v, want %v", got, c.want)
			}
		})
	}
}

func TestWithGuard(t *testing.T) {
	approve := verdict.Output{Verdict: verdict.Approve, VerdictReason: "looks fine", ReviewMarkdown: "All good."}
	if got := withGuard(approve, nil); !reflect.DeepEqual(got, approve) {
		t.Errorf("no findings changed the output: %+v", got)
	}
	fs := []testguard.Finding{{Kind: testguard.DeletedTest, Lang: "go", File: "parse_test.go", Test: "TestParse", Line: 12}}
	got := withGuard(approve, fs)
	if got.Verdict != verdict.RequestChanges {
		t.Errorf("verdict %s, want REQUEST_CHANGES", got.Verdict)
	}
	if strings.Contains(got.VerdictReason, "looks fine") {
		t.Errorf("the approval's reason was kept: %q", got.VerdictReason)
	}
	if !strings.HasPrefix(got.ReviewMarkdown, "### Test integrity") || !strings.Contains(got.ReviewMarkdown, "test `TestParse` deleted or renamed (was at `parse_test.go:12`)") ||
		!strings.HasSuffix(got.ReviewMarkdown, "All good.") {
		t.Errorf("review text:\n%s", got.ReviewMarkdown)
	}
	if len(got.Findings) != 1 || got.Findings[0].Severity != verdict.High || got.Findings[0].File != "parse_test.go" {
		t.Errorf("findings: %+v", got.Findings)
	}
	rc := withGuard(verdict.Output{Verdict: verdict.Discuss, VerdictReason: "why a new parser?"}, fs)
	if rc.Verdict != verdict.RequestChanges || !strings.HasSuffix(rc.VerdictReason, "; why a new parser?") {
		t.Errorf("a question: %+v", rc)
	}
}

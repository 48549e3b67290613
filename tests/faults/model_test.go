package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/tests/internal/rig"
)

// TestModelAPIErrors makes the model API answer the dev session with an
// error until the test heals it: the session's failure is the backend's,
// not the issue's, so the issue is not blocked, the session runs again at
// a later tick, and the issue is merged once the backend answers.
func TestModelAPIErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		code   ledger.Code
	}{
		{"model 429", 429, agent.CodeClaudeRateLimit},
		{"model 529", 529, agent.CodeClaudeOverloaded},
		{"model auth error", 401, ledger.CodeClaudeAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			failing := claudetest.Scenario{Name: "dev", Turns: []claudetest.Turn{{Status: tc.status}}}
			w := newWorld(t, setup{}, approve(), failing)
			w.start()
			n := w.backlog("Add a widget", "dev")
			// Two sessions met the error: the first did not end the issue.
			rig.Await(t, "the session retried after the model's error", 3*time.Minute, w.died, func() bool {
				return len(w.Model.MessageRequests("dev")) >= 2
			})
			said := w.logLines("WRN", "outcome="+string(tc.code))
			if len(said) == 0 {
				t.Errorf("no line says the backend failed with %s:\n%s", tc.code, w.lastLines(30))
			}
			if err := w.Model.SetScenarios(approve(), implement("dev", "widget.txt", "a widget")); err != nil {
				t.Fatal(err)
			}
			w.converge(tc.name, n, outcome{merged: true, file: "widget.txt", line: "a widget"}, 4*time.Minute)
			if w.ledgerHas(n, ledger.ReasonBlocked, "") {
				t.Errorf("the backend's error blocked issue #%d", n)
			}
			if errs := w.logLines("ERR", ""); len(errs) > 0 {
				t.Errorf("the backend's error was said as an error needing a human:\n%s", strings.Join(errs, "\n"))
			}
			t.Logf("%d lines said the backend's failure", len(said))
		})
	}
}

// sessionOnly runs fault for model sessions (the CLI started with -p) and
// the real CLI for anything else.
func sessionOnly(fault string) string {
	return "case \" $* \" in *\" -p \"*) ;; *) exec \"$REAL\" \"$@\" ;; esac\n" + fault + "\n"
}

// TestCLIFaults runs the real CLI inside a script that misbehaves around
// it: a CLI that lingers after its result, one that dies mid-stream, one
// whose output is interleaved with garbage, and a session that runs out
// of turns after committing.
func TestCLIFaults(t *testing.T) {
	t.Parallel()
	endless := []claudetest.Turn{commitLine("widget.txt", "a widget")}
	for range 205 {
		endless = append(endless, claudetest.Tools(claudetest.Bash("true")))
	}
	merged := outcome{merged: true, file: "widget.txt", line: "a widget"}
	for _, tc := range []struct {
		name string
		wrap string
		dev  claudetest.Scenario
		want outcome
	}{
		{"CLI hangs after its result", sessionOnly(`"$REAL" "$@"; sleep 317; exit 0`),
			implement("dev", "widget.txt", "a widget"), merged},
		{"CLI crashes mid-stream", sessionOnly(`"$REAL" "$@" | head -n 2; printf '{"type":"assistant","mess'; exit 3`),
			implement("dev", "widget.txt", "a widget"), outcome{code: ledger.CodeClaudeCrashed}},
		{"CLI prints garbage", sessionOnly(`"$REAL" "$@" | while IFS= read -r l; do printf 'garbage {{ not json\n%s\n' "$l"; done`),
			implement("dev", "widget.txt", "a widget"), merged},
		{"session exceeds max turns", "", claudetest.Scenario{Name: "dev", Turns: endless}, merged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, setup{wrap: tc.wrap}, approve(), tc.dev)
			w.start()
			n := w.backlog("Add a widget", "dev")
			w.converge(tc.name, n, tc.want, 6*time.Minute)
			w.checkStreakLines()
		})
	}
}

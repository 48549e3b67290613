package reproduce

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/runner"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
	"github.com/disinto/disinto/lib/text"
)

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

// Spec 95 §4.4: which run an issue is due for, from its labels alone.
func TestModeOfLabels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels []forge.LabelName
		want   Mode
		ok     bool
	}{
		{"bug-report only: reproduce", []forge.LabelName{forge.LabelBugReport}, ModeReproduce, true},
		{"rejected: nothing", []forge.LabelName{forge.LabelBugReport, forge.LabelRejected}, "", false},
		{"blocked: nothing", []forge.LabelName{forge.LabelBugReport, forge.LabelBlocked}, "", false},
		{"in-triage: triage", []forge.LabelName{forge.LabelBugReport, forge.LabelInTriage}, ModeTriage, true},
		{"in-progress: verify", []forge.LabelName{forge.LabelBugReport, forge.LabelInProgress}, ModeVerify, true},
		{"reproduced alone: settled", []forge.LabelName{forge.LabelBugReport, forge.LabelReproduced}, "", false},
		{"two stages: wait", []forge.LabelName{forge.LabelBugReport, forge.LabelInTriage, forge.LabelInProgress}, "", false},
		{"no bug-report: nothing", []forge.LabelName{forge.LabelBacklog}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := modeOf(forge.Issue{Number: 5, State: forge.StateOpen, Labels: tc.labels})
			if m != tc.want || ok != tc.ok {
				t.Errorf("modeOf = %q, %v; want %q, %v", m, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseOutcome(t *testing.T) {
	for _, tc := range []struct {
		name, mode, answer string
		want               Verdict
		err                bool
	}{
		{"fenced", "reproduce", "text\n```json\n{\"outcome\":\"reproduced\",\"findings\":\"x\"}\n```", Reproduced, false},
		{"bare", "reproduce", `so: {"outcome":"cannot-reproduce","findings":"x"}`, CannotReproduce, false},
		{"unknown field", "reproduce", `{"outcome":"reproduced","findings":"x","labels":["backlog"]}`, "", true},
		{"wrong mode", "verify", `{"outcome":"reproduced","findings":"x"}`, "", true},
		{"no findings", "reproduce", `{"outcome":"reproduced"}`, "", true},
		{"causes outside triage", "reproduce", `{"outcome":"reproduced","findings":"x","causes":[{"title":"a","body":"b"}]}`, "", true},
		{"conclusive triage without causes", "triage", `{"outcome":"reproduced","findings":"x"}`, "", true},
		{"bad screenshot name", "reproduce", `{"outcome":"reproduced","findings":"x","screenshots":["../etc/passwd.png"]}`, "", true},
		{"no object", "reproduce", "it is broken", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseOutcome(Mode(tc.mode), tc.answer)
			if tc.err {
				if !errors.Is(err, ErrOutcome) {
					t.Errorf("err %v, want ErrOutcome", err)
				}
				return
			}
			if err != nil || o.Outcome != tc.want {
				t.Errorf("outcome %q, %v; want %q", o.Outcome, err, tc.want)
			}
		})
	}
}

func TestFixTitleHasOnePrefix(t *testing.T) {
	p := forge.Issue{Number: 12, Title: "Fix: fix: crash"}
	for cause, want := range map[string]string{
		"":                    "fix: crash (#12)",
		"fix:  fix: rounding": "fix: rounding (#12)",
		"expiry in UTC":       "fix: expiry in UTC (#12)",
	} {
		if got := fixTitle(cause, p); got != want {
			t.Errorf("fixTitle(%q) = %q, want %q", cause, got, want)
		}
	}
}

// The session's flags are the pinned CLI's real ones: the Playwright
// server by --mcp-config, no other MCP server, an explicit allowlist.
func TestCLIArgs(t *testing.T) {
	args := strings.Join(CLIArgs("/tmp/mcp.json", 40, ""), " ")
	for _, want := range []string{"--mcp-config /tmp/mcp.json", "--strict-mcp-config", "--allowedTools mcp__playwright__browser_navigate,",
		"--permission-mode dontAsk", "--tools  --allowedTools", "--max-turns 40", "--output-format stream-json"} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %q: %s", want, args)
		}
	}
	if strings.Contains(args, "--mcp-server") || strings.Contains(args, "dangerously") {
		t.Errorf("args: %s", args)
	}
}

// A huge report still makes a runnable sidecar: the prompt is bounded and
// fenced as untrusted, and no text of it is shell syntax in the script.
func TestJobBoundsTheReport(t *testing.T) {
	dir := sandboxtest.Dir(t, "reproduce-job")
	a, err := New(Options{Project: "p", Repo: "o/p", Bot: "bot", Forge: &flakyForge{},
		Formulas: func(name string) (*formula.Formula, error) { return formula.Load(formulas.FS, name) },
		StateDir: dir, LockDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	body := "'; rm -rf / #\n" + strings.Repeat("x", 1<<20)
	j, err := a.job(context.Background(), Candidate{Issue: forge.Issue{Number: 3, Title: "t", Body: body}, Mode: ModeReproduce})
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Script) > 256<<10 {
		t.Errorf("script of %d bytes, over lib/runner's limit", len(j.Script))
	}
	if strings.Contains(j.Script, "rm -rf") {
		t.Errorf("report text in the script as shell syntax")
	}
	prompt := decodedPrompt(t, j.Script)
	if !strings.Contains(prompt, "untrusted input") || !strings.Contains(prompt, "rm -rf / #") || !strings.Contains(prompt, `mode "reproduce"`) {
		t.Errorf("prompt lacks the fenced report or the mode:\n%s", text.Clip(prompt, 3000))
	}
	if j.Kind != runner.Mechanical || j.Timeout != 17*time.Minute || j.Limits != DefaultLimits {
		t.Errorf("job %s %s %+v", j.Kind, j.Timeout, j.Limits)
	}
}

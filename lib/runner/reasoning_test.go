package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/runner"
	"github.com/disinto/disinto/lib/runner/runnertest"
)

// TestReasoningJobRunsABoundedSession: a reasoning job runs the image's
// real claude CLI against the scripted model server, with its declared
// model key and nothing else; the session's tool runs confined like a
// mechanical job, and the key never shows in the outcome.
func TestReasoningJobRunsABoundedSession(t *testing.T) {
	cli := engine(t)
	const key = "sk-runner-test-key-5d2c9e"
	srv, url := modelServer(t, cli, claudetest.Scenario{
		Name: "runner-reasoning",
		Turns: []claudetest.Turn{
			claudetest.Tools(claudetest.Bash(`echo "uid=$(id -u)"; ls /run/secrets; ` +
				`grep -E '^CapEff' /proc/self/status; echo "workdir=$(pwd)"`)),
			claudetest.Text("released: scenario done"),
		},
	})
	r := newRunner(t, cli, runner.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := r.Run(ctx, runner.Job{
		ID:       "reasoning",
		Kind:     runner.Reasoning,
		Script:   "scenario: runner-reasoning\nRun the release formula.",
		Secrets:  map[string]string{"ANTHROPIC_API_KEY": key},
		Env:      map[string]string{"ANTHROPIC_BASE_URL": url},
		Network:  "bridge",
		MaxTurns: 5,
	})
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("run: %v, exit %d\n%s", err, out.ExitCode, out.Log)
	}
	if !strings.Contains(out.Log, `"type":"result"`) || !strings.Contains(out.Log, "released: scenario done") {
		t.Errorf("log lacks the session's result:\n%s", out.Log)
	}
	if strings.Contains(out.Log, key) {
		t.Errorf("log shows the model key:\n%s", out.Log)
	}
	reqs := srv.MessageRequests("runner-reasoning")
	if len(reqs) < 2 {
		t.Fatalf("%d model requests, want the tool turn and the final one", len(reqs))
	}
	if got := reqs[0].Header.Get("X-Api-Key"); got != key {
		t.Errorf("the CLI sent key %q, want the declared one", got)
	}
	tool := strings.Join(reqs[len(reqs)-1].ToolResults, "\n")
	for _, want := range []string{"uid=1000", "ANTHROPIC_API_KEY", "CapEff:\t0000000000000000", "workdir=/tmp"} {
		if !strings.Contains(tool, want) {
			t.Errorf("the session's tool output lacks %q:\n%s", want, tool)
		}
	}
	requireRemoved(t, cli, out.Container)
}

// modelServer serves the scenarios where containers on the engine's
// default bridge reach it (the bridge's gateway on the host) and returns
// it with its base URL.
func modelServer(t *testing.T, cli *client.Client, scenarios ...claudetest.Scenario) (*claudetest.Server, string) {
	t.Helper()
	srv, err := claudetest.NewServer(scenarios...)
	if err != nil {
		t.Fatal(err)
	}
	srv.Logf = t.Logf
	return srv, runnertest.ServeOnBridge(t, cli, srv)
}

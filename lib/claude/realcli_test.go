package claude_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
)

// These tests run the pinned real claude CLI (tests/setup/claude.sh)
// against the scripted model server.

func newRealExec(t *testing.T, baseURL string) *claude.Exec {
	t.Helper()
	e, err := claude.New(claude.Options{
		Bin:           claudetest.RequireCLI(t),
		Backends:      []claude.Backend{{Name: "scripted", BaseURL: baseURL, APIKey: "sk-test-not-a-real-key", MaxSessions: 2}},
		BaseEnv:       claudetest.Env(t),
		IdleGrace:     30 * time.Second,
		Timeout:       3 * time.Minute,
		TranscriptDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "--allow-empty", "-m", "root")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestRealCLICommitsAndResumes(t *testing.T) {
	t.Parallel()
	srv, url := claudetest.Start(t, claudetest.Scenario{
		Name: "commit-hello",
		Turns: []claudetest.Turn{
			claudetest.Tools(claudetest.Bash(`echo hello > hello.txt && git add hello.txt && git commit -q -m "add hello" && echo committed-ok`)),
			claudetest.Text("I created hello.txt and committed it."),
			claudetest.Text("Yes, the commit is there."),
		},
	})
	e := newRealExec(t, url)
	dir := gitRepo(t)
	ctx := context.Background()

	res, err := e.Run(ctx, claude.Invocation{
		Prompt: "scenario: commit-hello\nCreate hello.txt and commit it.", Dir: dir, MaxTurns: 5, Label: "dev-issue-1",
	})
	if err != nil {
		t.Fatalf("first run: %v (transcript %s)", err, res.TranscriptPath)
	}
	if !res.Success() || res.SessionID == "" || res.ExitCode != 0 {
		t.Fatalf("first run result: %+v", res)
	}
	if res.Text != "I created hello.txt and committed it." {
		t.Errorf("text = %q", res.Text)
	}
	if res.CostUSD <= 0 || res.Usage.InputTokens == 0 || res.Usage.OutputTokens == 0 || res.NumTurns < 2 {
		t.Errorf("want cost, usage and turns from the result event, got %+v", res)
	}
	if got := git(t, dir, "log", "-1", "--format=%s"); got != "add hello" {
		t.Errorf("last commit = %q, want %q", got, "add hello")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hello.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("hello.txt = %q, %v", b, err)
	}
	reqs := srv.MessageRequests("commit-hello")
	if len(reqs) != 2 || len(reqs[1].ToolResults) != 1 || !strings.Contains(reqs[1].ToolResults[0], "committed-ok") {
		t.Fatalf("want 2 requests, the second carrying the Bash tool result; got %+v", reqs)
	}

	res2, err := e.Run(ctx, claude.Invocation{
		Prompt: "Is the commit there?", ResumeID: res.SessionID, Dir: dir, MaxTurns: 5, Label: "dev-issue-1",
	})
	if err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	if res2.Text != "Yes, the commit is there." || res2.SessionID == "" {
		t.Errorf("resumed result: %+v", res2)
	}
	reqs = srv.MessageRequests("commit-hello")
	last := reqs[len(reqs)-1]
	if last.Turn != 2 {
		t.Errorf("resumed request saw %d earlier assistant turns, want 2", last.Turn)
	}
	joined := strings.Join(last.Texts, "\n")
	if !strings.Contains(joined, "Create hello.txt and commit it.") || !strings.Contains(joined, "Is the commit there?") {
		t.Errorf("resumed request lacks the earlier conversation: %q", joined)
	}
	if len(last.ToolResults) != 1 {
		t.Errorf("resumed request carries %d tool results, want the earlier one", len(last.ToolResults))
	}
}

func TestRealCLIUnknownSessionIsReported(t *testing.T) {
	t.Parallel()
	_, url := claudetest.Start(t, claudetest.Scenario{Name: "any", Default: true, Turns: []claudetest.Turn{claudetest.Text("hi")}})
	e := newRealExec(t, url)
	_, err := e.Run(context.Background(), claude.Invocation{
		Prompt: "hello", ResumeID: "11111111-2222-4333-8444-555555555555", Dir: t.TempDir(),
	})
	if err == nil || !strings.Contains(err.Error(), "session not found") {
		t.Fatalf("err = %v, want ErrSessionNotFound", err)
	}
}

func TestRealCLIConcurrentSessionsShareOneServer(t *testing.T) {
	t.Parallel()
	var scenarios []claudetest.Scenario
	for _, name := range []string{"left", "right"} {
		scenarios = append(scenarios, claudetest.Scenario{Name: name, Turns: []claudetest.Turn{
			claudetest.Tools(claudetest.Write("{{.Cwd}}/"+name+".txt", name+"\n")),
			claudetest.Text(name + " written"),
		}})
	}
	srv, url := claudetest.Start(t, scenarios...)
	e := newRealExec(t, url)
	type out struct {
		name, dir string
		res       claude.Result
		err       error
	}
	results := make(chan out, 2)
	for _, s := range scenarios {
		dir := t.TempDir()
		go func() {
			res, err := e.Run(context.Background(), claude.Invocation{Prompt: "scenario: " + s.Name, Dir: dir, MaxTurns: 4})
			results <- out{s.Name, dir, res, err}
		}()
	}
	for range scenarios {
		o := <-results
		if o.err != nil || o.res.Text != o.name+" written" {
			t.Errorf("%s: %+v %v", o.name, o.res, o.err)
		}
		if b, err := os.ReadFile(filepath.Join(o.dir, o.name+".txt")); err != nil || string(b) != o.name+"\n" {
			t.Errorf("%s: file %q %v", o.name, b, err)
		}
		if n := len(srv.MessageRequests(o.name)); n != 2 {
			t.Errorf("%s: %d requests, want 2", o.name, n)
		}
	}
}

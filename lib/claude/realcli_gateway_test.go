package claude_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/gateway"
	"github.com/disinto/disinto/lib/sandbox"
)

// TestRealCLIThroughGateway: a session of the real CLI reaches the model
// through the gateway only. Everything it can see (its environment, its
// home, its login directory, /proc) holds neither the backend's key nor
// the daemon's login; the key it was given stops working when the run
// ends; and its usage is what the backend reported, not what the CLI
// printed.
func TestRealCLIThroughGateway(t *testing.T) {
	t.Parallel()
	// A dev and a review session on the default backend, and a session
	// on a local backend, which has no credential at all.
	for _, tc := range []struct{ label, backend string }{
		{"dev-p-issue-9", "scripted"}, {"review-p-pr-3", "scripted"}, {"dev-p-issue-4", "llama"},
	} {
		t.Run(tc.label+"@"+tc.backend, func(t *testing.T) {
			t.Parallel()
			throughGateway(t, tc.label, tc.backend)
		})
	}
}

func throughGateway(t *testing.T, label, backend string) {
	const (
		apiCanary   = "sk-ant-api03-CANARYKEY0123456789"
		loginCanary = "sk-ant-oat01-CANARYLOGIN0123456789"
	)
	look := `env; echo HOME-FILES; ls -la ~ ~/.claude 2>&1; cat ~/.claude/.credentials.json "$CLAUDE_CONFIG_DIR/.credentials.json" 2>&1; ` +
		`tr '\0' '\n' < /proc/self/environ; tr '\0' '\n' < /proc/$PPID/environ; echo "KEY=$ANTHROPIC_API_KEY URL=$ANTHROPIC_BASE_URL"`
	srv, url := claudetest.Start(t, claudetest.Scenario{
		Name:         "gateway-canary",
		Turns:        []claudetest.Turn{claudetest.Tools(claudetest.Bash(look)), claudetest.Text("looked around")},
		InputTokens:  321,
		OutputTokens: 17,
	})
	g, err := gateway.New(gateway.Options{Backends: []gateway.Backend{{Name: "scripted", URL: url, APIKey: apiCanary}, {Name: "llama", URL: url}},
		Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)

	shared := t.TempDir() // the daemon's CLAUDE_CONFIG_DIR, with a login
	if err := os.WriteFile(filepath.Join(shared, ".credentials.json"),
		[]byte(`{"claudeAiOauth":{"accessToken":"`+loginCanary+`","refreshToken":"r"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := claude.New(claude.Options{
		Bin: claudetest.RequireCLI(t),
		Backends: []claude.Backend{{Name: "scripted", BaseURL: url, APIKey: apiCanary, Env: map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": loginCanary}},
			{Name: "llama", BaseURL: url}},
		BaseEnv:   append(claudetest.Env(t), "ANTHROPIC_API_KEY="+apiCanary),
		ConfigDir: shared, IdleGrace: 30 * time.Second, Timeout: 3 * time.Minute, TranscriptDir: t.TempDir(),
		Gateway: g, GatewayURL: gw.URL,
	})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := sb.Workspace("gw")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ws.Repo(), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background(), claude.Invocation{Prompt: "scenario: gateway-canary\nLook around.", Dir: ws.Repo(),
		Workspace: ws, MaxTurns: 4, Label: label, Backend: backend})
	if err != nil || !res.Success() {
		t.Fatalf("run: %v %+v", err, res)
	}

	var seen strings.Builder
	var metered claude.Usage
	for _, r := range srv.Requests() {
		seen.WriteString(strings.Join(r.ToolResults, "\n"))
		if r.Path == "/v1/messages" && r.Scenario == "gateway-canary" {
			metered.InputTokens += 321
			metered.OutputTokens += 17
		}
		want := apiCanary
		if backend == "llama" {
			want = "" // a local backend gets no credential
		}
		if k := r.Header.Get("X-Api-Key"); k != want || (backend == "llama" && r.Header.Get("Authorization") != "") {
			t.Errorf("the %s backend got key %q and authorization %q", backend, k, r.Header.Get("Authorization"))
		}
	}
	out := seen.String()
	if !strings.Contains(out, "HOME-FILES") {
		t.Fatalf("the session's look around never reached the model:\n%s", out)
	}
	for _, canary := range []string{apiCanary, loginCanary} {
		if strings.Contains(out, canary) {
			t.Errorf("the session saw %s:\n%s", canary, out)
		}
	}
	m := regexp.MustCompile(`KEY=(dgw-[0-9a-f]+) URL=(\S+)`).FindStringSubmatch(out)
	if m == nil || m[2] != gw.URL {
		t.Fatalf("the session's key and URL: %q", m)
	}
	req, _ := http.NewRequest(http.MethodPost, gw.URL+"/v1/messages", strings.NewReader(`{"messages":[{"role":"user","content":"scenario: gateway-canary"}]}`))
	req.Header.Set("X-Api-Key", m[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the run's key after the run: %d, want 401", resp.StatusCode)
	}
	if metered.InputTokens == 0 || res.Usage != metered {
		t.Errorf("usage %+v, want the backend's %+v (the CLI reported %+v)", res.Usage, metered, res.ReportedUsage)
	}
	if login, _ := os.ReadFile(filepath.Join(shared, ".credentials.json")); !strings.Contains(string(login), loginCanary) {
		t.Errorf("the daemon's login changed: %s", login)
	}
}

// TestRealCLIStopsAtRunBudget: a session past its run's budget gets no
// further model request and the run ends as budget.exhausted.
func TestRealCLIStopsAtRunBudget(t *testing.T) {
	t.Parallel()
	srv, url := claudetest.Start(t, claudetest.Scenario{
		Name:         "budget",
		Turns:        []claudetest.Turn{claudetest.Tools(claudetest.Bash("echo one")), claudetest.Tools(claudetest.Bash("echo two")), claudetest.Text("done")},
		InputTokens:  400,
		OutputTokens: 10,
	})
	g, err := gateway.New(gateway.Options{Backends: []gateway.Backend{{Name: "scripted", URL: url, APIKey: "sk-test-not-a-real-key"}}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)
	e, err := claude.New(claude.Options{
		Bin: claudetest.RequireCLI(t), Backends: []claude.Backend{{Name: "scripted", BaseURL: url}}, BaseEnv: claudetest.Env(t),
		IdleGrace: 30 * time.Second, Timeout: 3 * time.Minute, TranscriptDir: t.TempDir(), Gateway: g, GatewayURL: gw.URL,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := claude.WithScope(context.Background(), claude.Scope{Project: "p", Role: "dev", Limits: gateway.Limits{Run: gateway.Bound{Tokens: 300}}})
	res, err := e.Run(ctx, claude.Invocation{Prompt: "scenario: budget\nWork.", Dir: gitRepo(t), MaxTurns: 6, Label: "dev-issue-3"})
	if !errors.Is(err, claude.ErrBudgetExhausted) || claude.Code(err) != "budget.exhausted" {
		t.Fatalf("run past its budget: %v (%+v)", err, res)
	}
	n := 0
	for _, r := range srv.Requests() {
		if r.Path == "/v1/messages" && r.Scenario == "budget" {
			n++
		}
	}
	if n != 1 || res.Usage.InputTokens != 400 {
		t.Errorf("%d model requests, usage %+v; want 1 and its 400 input tokens", n, res.Usage)
	}
}

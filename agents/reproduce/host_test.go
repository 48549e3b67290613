package reproduce

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// playwrightMCPVersion is the pinned @playwright/mcp, as
// docker/reproduce/Dockerfile and tests/setup/reproduce.sh pin it.
const playwrightMCPVersion = "0.0.56"

// hostMCP is the host's install of the pinned MCP server
// (tests/setup/reproduce.sh), failing the test when it is missing.
func hostMCP(t *testing.T) string {
	t.Helper()
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	p := filepath.Join(base, "disinto", "playwright-mcp", playwrightMCPVersion, "node_modules", "@playwright", "mcp", "cli.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the pinned Playwright MCP server is missing (%v): run tests/setup/reproduce.sh", err)
	}
	return p
}

// TestPlaywrightMCPOnTheHost drives the pinned Playwright MCP server with
// Debian's chromium by the real CLI, outside a container, with exactly the
// session's flags and MCP config: the scripted model's browser calls load
// the tiny web app, the screenshot lands in the output directory, and the
// final answer parses as an outcome. A tool outside the allowlist is
// refused.
func TestPlaywrightMCPOnTheHost(t *testing.T) {
	if testing.Short() {
		t.Skip("real CLI and browser: skipped under -short")
	}
	cliPath := claudetest.RequireCLI(t)
	entry := hostMCP(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node: %v (apt-get install nodejs)", err)
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		t.Fatalf("chromium: %v (run tests/setup/chromium.sh)", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	app := serve(t, ln, cartApp())
	const scenario = "host-cart-nan"
	model, err := claudetest.NewServer(claudetest.Scenario{Name: scenario, Turns: []claudetest.Turn{
		claudetest.Tools(claudetest.Block{Type: "tool_use", Tool: "mcp__playwright__browser_navigate",
			Input: map[string]any{"url": app + "/cart?qty=abc"}}),
		claudetest.Tools(claudetest.Block{Type: "tool_use", Tool: "mcp__playwright__browser_take_screenshot",
			Input: map[string]any{"filename": "issue-7-step-1.png", "type": "png"}}),
		claudetest.Tools(claudetest.Bash("echo escaped > /tmp/reproduce-escape-" + scenario)),
		claudetest.Text("```json\n" + `{"outcome": "reproduced", "findings": "NaN total.", "screenshots": ["issue-7-step-1.png"]}` + "\n```"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	model.Logf = t.Logf
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	modelURL := serve(t, mln, model)

	dir := sandboxtest.Dir(t, "reproduce-host")
	shots := filepath.Join(dir, "screenshots")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	mcp, err := MCPConfig(node, entry, "/usr/bin/chromium", shots)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, mcp, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliPath, CLIArgs(cfg, 10, "")...)
	cmd.Dir = dir
	cmd.Env = append(claudetest.Env(t), "ANTHROPIC_BASE_URL="+modelURL, "ANTHROPIC_API_KEY=sk-host-test-key-4a1b",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	cmd.Stdin = strings.NewReader("scenario: " + scenario + "\nReproduce the bug.")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = os.Remove("/tmp/reproduce-escape-" + scenario)
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\nstderr:\n%s\nstdout tail:\n%s", err, stderr.String(), tail(stdout.String(), 4000))
	}
	ev, ok := lastResult(stdout.String())
	if !ok {
		t.Fatalf("no result event:\n%s", tail(stdout.String(), 4000))
	}
	o, err := parseOutcome(ModeReproduce, ev.Result)
	if err != nil || o.Outcome != Reproduced {
		t.Fatalf("outcome %+v, %v from %q", o, err, ev.Result)
	}
	var seen strings.Builder
	for _, rq := range model.MessageRequests(scenario) {
		seen.WriteString(strings.Join(rq.ToolResults, "\n"))
	}
	if !strings.Contains(seen.String(), "Total: NaN EUR") {
		t.Errorf("the browser never showed the NaN total; tool results:\n%s", seen.String())
	}
	if _, err := os.Stat("/tmp/reproduce-escape-" + scenario); err == nil {
		t.Errorf("the session ran a shell command outside its allowlist")
	}
	var png []byte
	_ = filepath.WalkDir(shots, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "issue-7-step-1.png" {
			png, _ = os.ReadFile(p)
		}
		return nil
	})
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("no screenshot in %s", shots)
	}
}

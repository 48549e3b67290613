package reproduce

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/runner"
)

// Paths inside the sidecar, all on its /tmp tmpfs.
const (
	// ScreenshotDir is the Playwright MCP server's output directory:
	// screenshots the session takes land here, and only *.png files of
	// it leave the container.
	ScreenshotDir = "/tmp/screenshots"
	mcpConfigFile = "/tmp/mcp.json"
	promptFile    = "/tmp/prompt.md"
	// playwrightMCP is the MCP server's entry point in the reproduce
	// image (docker/reproduce).
	playwrightMCP = "/opt/playwright-mcp/node_modules/@playwright/mcp/cli.js"
	// chromiumPath is Debian's chromium in the image.
	chromiumPath = "/usr/bin/chromium"
)

// Markers around the screenshots archive in the container's output.
const (
	artifactsBegin = "----- disinto reproduce artifacts begin -----"
	artifactsEnd   = "----- disinto reproduce artifacts end -----"
)

// AllowedTools are the tools a session may use, and the only ones: the
// Playwright MCP server's browser tools (the CLI denies anything else in
// dontAsk mode, and has no built-in tool at all: --tools "").
var AllowedTools = []string{
	"mcp__playwright__browser_navigate",
	"mcp__playwright__browser_navigate_back",
	"mcp__playwright__browser_snapshot",
	"mcp__playwright__browser_click",
	"mcp__playwright__browser_type",
	"mcp__playwright__browser_fill_form",
	"mcp__playwright__browser_select_option",
	"mcp__playwright__browser_press_key",
	"mcp__playwright__browser_hover",
	"mcp__playwright__browser_wait_for",
	"mcp__playwright__browser_take_screenshot",
	"mcp__playwright__browser_console_messages",
	"mcp__playwright__browser_network_requests",
	"mcp__playwright__browser_resize",
	"mcp__playwright__browser_tabs",
	"mcp__playwright__browser_close",
}

// builtinTools are the CLI's own tools the session has at all (--tools):
// none. No shell, no file access: nothing of the container, its secret
// files included, is readable but through the browser, which refuses
// file:// URLs.
const builtinTools = ""

// MCPConfig is the --mcp-config document of a session: one server,
// playwright, running Debian's chromium headless without its own sandbox
// (the container is the sandbox: no capabilities, no user namespaces),
// with an in-memory profile and outDir as its output directory. node and
// entry are the server's program; empty takes the image's.
func MCPConfig(node, entry, chromium, outDir string) ([]byte, error) {
	if node == "" {
		node = "node"
	}
	if entry == "" {
		entry = playwrightMCP
	}
	if chromium == "" {
		chromium = chromiumPath
	}
	type server struct {
		Type    string   `json:"type"`
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	return json.Marshal(map[string]any{"mcpServers": map[string]server{
		"playwright": {Type: "stdio", Command: node, Args: []string{
			entry, "--headless", "--browser", "chromium", "--executable-path", chromium,
			"--no-sandbox", "--isolated", "--output-dir", outDir,
			"--viewport-size", "1280x800",
		}},
	}})
}

// CLIArgs are the claude arguments of a session (after the program
// name): print mode with stream-json, no settings or MCP servers but the
// given config, no permission prompts (what is not allowed is denied),
// no built-in tools, the explicit allowlist, the turn limit and the
// model.
func CLIArgs(mcpConfig string, maxTurns int, model string) []string {
	args := []string{
		"-p", "--output-format", "stream-json", "--verbose",
		"--setting-sources=", "--strict-mcp-config", "--mcp-config", mcpConfig,
		"--permission-mode", "dontAsk",
		"--tools", builtinTools,
		"--allowedTools", strings.Join(AllowedTools, ","),
		"--max-turns", strconv.Itoa(maxTurns),
	}
	if model != "" {
		args = append(args, "--model", model)
	}
	return args
}

// sessionScript is the sidecar's script: export the model credential
// from its secret file, write the MCP config and the prompt (both
// base64, so no text of them is ever shell syntax), run the session, then
// print the screenshots as a base64 tar archive between the artifact
// markers, and exit with the session's status.
func sessionScript(prompt string, mcp []byte, maxTurns int, model string) string {
	var b strings.Builder
	b.WriteString("set -eu\n")
	b.WriteString("mkdir -p " + ScreenshotDir + " /tmp/.claude\n")
	b.WriteString(`for n in ANTHROPIC_API_KEY ANTHROPIC_AUTH_TOKEN CLAUDE_CODE_OAUTH_TOKEN; do
	if [ -f "` + runner.SecretsDir + `/$n" ]; then export "$n=$(cat "` + runner.SecretsDir + `/$n")"; fi
done
# The credential lives on in the CLI's environment only.
chmod 0700 ` + runner.SecretsDir + ` && rm -f ` + runner.SecretsDir + `/*
`)
	b.WriteString("export CLAUDE_CONFIG_DIR=/tmp/.claude CLAUDE_CODE_DISABLE_CLAUDE_MDS=1 CLAUDE_CODE_DISABLE_AUTO_MEMORY=1 " +
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1\n")
	fmt.Fprintf(&b, "printf '%%s' '%s' | base64 -d > %s\n", base64.StdEncoding.EncodeToString(mcp), mcpConfigFile)
	fmt.Fprintf(&b, "printf '%%s' '%s' | base64 -d > %s\n", base64.StdEncoding.EncodeToString([]byte(prompt)), promptFile)
	b.WriteString("set +e\nclaude")
	for _, a := range CLIArgs(mcpConfigFile, maxTurns, model) {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString(" < " + promptFile + "\ncode=$?\nset -e\n")
	b.WriteString("echo\necho '" + artifactsBegin + "'\n")
	b.WriteString("(cd " + ScreenshotDir + " && find . -maxdepth 3 -type f -name '*.png' -size -8M | sort | head -n " +
		strconv.Itoa(maxShots) + " | tar -c -f - -T - | base64)\n")
	b.WriteString("echo '" + artifactsEnd + "'\nexit \"$code\"\n")
	return b.String()
}

// shellQuote single-quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Screenshot is one image a session took.
type Screenshot struct {
	Name string
	Data []byte
}

// errNoArtifacts means the output has no complete artifacts section.
var errNoArtifacts = errors.New("no artifacts in the sidecar's output")

// readArtifacts takes the screenshots out of a sidecar's output and
// returns the output without them. Only *.png regular files with plain
// names, each under the attachment limit, are kept.
func readArtifacts(log string, limit int) ([]Screenshot, string, error) {
	i := strings.LastIndex(log, artifactsBegin)
	if i < 0 {
		return nil, log, errNoArtifacts
	}
	rest := log[i+len(artifactsBegin):]
	j := strings.Index(rest, artifactsEnd)
	if j < 0 {
		return nil, log[:i], errNoArtifacts
	}
	clean := log[:i] + rest[j+len(artifactsEnd):]
	enc := strings.Join(strings.Fields(rest[:j]), "")
	if enc == "" {
		return nil, clean, nil
	}
	data, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, clean, fmt.Errorf("decode artifacts: %w", err)
	}
	var shots []Screenshot
	tr := tar.NewReader(bytes.NewReader(data))
	for len(shots) < maxShots {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return shots, clean, fmt.Errorf("read artifacts: %w", err)
		}
		name := path.Base(h.Name)
		if h.Typeflag != tar.TypeReg || !screenshotRe.MatchString(name) || h.Size <= 0 || h.Size > int64(limit) {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, int64(limit)))
		if err != nil {
			return shots, clean, fmt.Errorf("read artifact %s: %w", name, err)
		}
		shots = append(shots, Screenshot{Name: name, Data: b})
	}
	return shots, clean, nil
}

// jobTimeout is a run's container timeout: the formula's, plus a margin
// for the container's start and the archive at the end.
func jobTimeout(formulaMinutes int) time.Duration {
	if formulaMinutes <= 0 {
		formulaMinutes = 15
	}
	return time.Duration(formulaMinutes)*time.Minute + 2*time.Minute
}

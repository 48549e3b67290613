package claudetest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// CLIVersion is the pinned version of the npm package
// @anthropic-ai/claude-code the tests run.
const CLIVersion = "2.1.328"

// CLICacheDir is where tests/setup/claude.sh installs the pinned CLI
// (npm --prefix), under $XDG_CACHE_HOME or $HOME/.cache.
func CLICacheDir() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "disinto", "claude-code", CLIVersion)
}

// SharedCLIPath is where tests/setup/claude.sh, run as root, publishes the
// pinned CLI for every user: sandboxed sessions run under their own uids
// and cannot enter root's home.
func SharedCLIPath() string {
	return filepath.Join("/usr/local/lib/disinto/claude-code", CLIVersion, "claude")
}

// CLIPath returns the real claude executable: $DISINTO_CLAUDE_BIN, else
// the shared install, else the pinned install in CLICacheDir. The error
// says how to install it.
func CLIPath() (string, error) {
	if p := os.Getenv("DISINTO_CLAUDE_BIN"); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("DISINTO_CLAUDE_BIN=%s: %w", p, err)
		}
		return p, nil
	}
	if p := SharedCLIPath(); executable(p) == nil {
		return p, nil
	}
	// The npm package's bin entry is the native executable once its
	// postinstall has copied the platform binary over the placeholder.
	p := filepath.Join(CLICacheDir(), "node_modules", ".bin", "claude")
	if err := executable(p); err != nil {
		return "", fmt.Errorf("claude CLI %s not installed (%w): run tests/setup/claude.sh "+
			"(npm install --prefix %s @anthropic-ai/claude-code@%s) or set DISINTO_CLAUDE_BIN",
			CLIVersion, err, CLICacheDir(), CLIVersion)
	}
	return p, nil
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", p)
	}
	return nil
}

// RequireCLI returns the real CLI's path or fails the test with
// installation instructions. It never skips: a missing CLI is a failure.
func RequireCLI(t testing.TB) string {
	t.Helper()
	p, err := CLIPath()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Env returns a base environment for running the real CLI offline in a
// test: PATH from the test process, a fresh HOME and CLAUDE_CONFIG_DIR
// under t.TempDir(), IS_SANDBOX=1 when running as root (the CLI refuses
// --dangerously-skip-permissions for root otherwise), git identity
// variables, and nothing else.
func Env(t testing.TB) []string {
	t.Helper()
	home := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"LANG=C.UTF-8",
		"TZ=UTC",
		"GIT_AUTHOR_NAME=disinto test", "GIT_AUTHOR_EMAIL=test@disinto.invalid",
		"GIT_COMMITTER_NAME=disinto test", "GIT_COMMITTER_EMAIL=test@disinto.invalid",
	}
	if os.Geteuid() == 0 {
		env = append(env, "IS_SANDBOX=1")
	}
	return env
}

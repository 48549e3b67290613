package rig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

// Scene is what a daemon works on, set up by hand as `disinto init`
// would: a project repository on a real Gitea with its owner, dev bot and
// review bot (see forgetest.Server.NewProject), and the scripted model
// server its sessions talk to.
type Scene struct {
	forgetest.Project
	Srv *forgetest.Server
	// Model serves the sessions' model requests at ModelURL.
	Model    *claudetest.Server
	ModelURL string
}

// NewScene provisions a project named prefix (plus a unique suffix) on
// srv and starts the model server with scenarios.
func NewScene(t testing.TB, srv *forgetest.Server, prefix string, scenarios ...claudetest.Scenario) *Scene {
	t.Helper()
	s := &Scene{Srv: srv}
	s.Model, s.ModelURL = claudetest.Start(t, scenarios...)
	s.Project = srv.NewProject(t, prefix)
	return s
}

// Credentials are the env-file lines of the bots' tokens and passwords.
func (s *Scene) Credentials() []string {
	return []string{"FORGE_TOKEN=" + s.Dev.Token, "FORGE_PASS=" + s.Dev.Password,
		"FORGE_REVIEW_TOKEN=" + s.Reviewer.Token, "FORGE_REVIEW_PASS=" + s.Reviewer.Password}
}

// Secrets are every credential of the scene's users.
func (s *Scene) Secrets() []string {
	return []string{s.Dev.Token, s.Dev.Password, s.Reviewer.Token, s.Reviewer.Password, s.Owner.Token, s.Owner.Password}
}

// ModelEnv is the environment that points the daemon's claude CLI at
// cli, the model server at url and a home of its own.
func ModelEnv(url, cli, home string) []string {
	return []string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=test", "CLAUDE_BIN=" + cli, "IS_SANDBOX=1",
		"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude")}
}

// WriteProject writes dir/<name>.toml, creating dir: the project name
// of repo on the forge at forgeURL, with primary branch main and no CI.
func WriteProject(t testing.TB, dir, name, repo, forgeURL string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf("name = %q\nrepo = %q\nforge_url = %q\nprimary_branch = \"main\"\n\n[ci]\nsystem = \"none\"\n", name, repo, forgeURL)
	writeFile(t, filepath.Join(dir, name+".toml"), toml)
}

// WriteEnvFile writes lines (KEY=VALUE) as the env file path.
func WriteEnvFile(t testing.TB, path string, lines ...string) {
	t.Helper()
	writeFile(t, path, strings.Join(lines, "\n")+"\n")
}

// writeFile writes content to path, readable by its owner only.
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

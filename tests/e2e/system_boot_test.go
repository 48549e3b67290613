package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

// system is one project provisioned by `disinto init` on a fresh Gitea,
// with its daemon running against the scripted model server.
type system struct {
	*sysEnv
	srv   *forgetest.Server
	model *claudetest.Server
	// listen is the daemon's address; the webhook points at it.
	listen string
	// statusListen is where the daemon serves /status and /metrics.
	statusListen string
	initArgs     []string
	// daemonEnv is the process environment of the daemon and of one-shot
	// runs, besides the env file.
	daemonEnv []string
	// secrets are the env file's secret values (and the admin password)
	// by name.
	secrets map[string]string
	d       *daemonProc
}

// bootSystem runs `disinto init` and `disinto config check`, then starts
// `disinto daemon` with grace for running sessions at shutdown, and waits
// until it serves.
func bootSystem(t *testing.T, grace time.Duration, scenarios ...claudetest.Scenario) *system {
	t.Helper()
	return bootSystemEnv(t, grace, nil, scenarios...)
}

// bootSystemEnv is bootSystem with env added to the daemon's environment.
func bootSystemEnv(t *testing.T, grace time.Duration, env []string, scenarios ...claudetest.Scenario) *system {
	t.Helper()
	return bootWith(t, grace, laneOptions{env: env}, scenarios...)
}

// bootWith boots the system as o says: init (with o's local bots), o's
// edit of the project file, config check, the daemon with o's
// environment.
func bootWith(t *testing.T, grace time.Duration, o laneOptions, scenarios ...claudetest.Scenario) *system {
	t.Helper()
	cli := claudetest.RequireCLI(t)
	y := &system{sysEnv: newSysEnv(t), srv: forgetest.Start(t), listen: freeAddr(t), statusListen: freeAddr(t)}
	var modelURL string
	y.model, modelURL = claudetest.Start(t, scenarios...)

	y.initArgs = []string{"init", "--yes", "--forge-url", y.srv.URL, "--admin-user", y.srv.AdminLogin,
		"--admin-password", y.srv.AdminPassword, "--repo", "acme/widgets", "--source", sourceRepo(t),
		"--webhook-url", "http://" + y.listen + "/hooks/forgejo", "--wait-forge", "0s"}
	for _, lb := range o.localBots {
		y.initArgs = append(y.initArgs, "--local-bot", lb)
	}
	y.mustRun(nil, y.initArgs...)
	if o.project != nil {
		files, err := filepath.Glob(filepath.Join(y.projects, "*.toml"))
		if err != nil || len(files) != 1 {
			t.Fatalf("project files: %v %v", files, err)
		}
		data, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(files[0], []byte(o.project(string(data))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out := y.mustRun(nil, "config", "check"); !strings.Contains(out, "1 project(s)") {
		t.Fatalf("config check: %s", out)
	}
	envVals, err := config.ReadEnvFile(y.envFile)
	if err != nil {
		t.Fatal(err)
	}
	y.secrets = map[string]string{"admin password": y.srv.AdminPassword}
	for k, v := range envVals {
		if config.IsSecretName(k) && v != "" {
			y.secrets[k] = v
		}
	}
	if envVals["FORGE_TOKEN"] == "" || envVals["FORGE_REVIEW_TOKEN"] == "" || envVals["DISINTO_WEBHOOK_SECRET"] == "" {
		t.Fatalf("env file lacks the dev or review token or the webhook secret: %v", keys(envVals))
	}

	home := filepath.Join(y.dir, "claude-home")
	y.daemonEnv = []string{
		"ANTHROPIC_BASE_URL=" + modelURL, "ANTHROPIC_API_KEY=test", "CLAUDE_BIN=" + cli, "IS_SANDBOX=1",
		"HOME=" + home, "CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"POLL_INTERVAL=3600", "CLAUDE_MAX_SESSIONS=2", "CLAUDE_TIMEOUT=240",
	}
	y.daemonEnv = append(y.daemonEnv, o.env...)
	y.d = y.startDaemon(y.daemonEnv, y.listen, y.statusListen, grace)
	pollUntil(t, "the daemon's daemon.json", time.Minute, y.died, func() bool {
		return isFile(filepath.Join(y.data, "daemon.json"))
	})
	httpGet(t, "http://"+y.listen+"/healthz")
	return y
}

// died reports why the daemon is gone, or "" while it runs.
func (y *system) died() string {
	if y.d.exited() {
		return "the daemon exited: " + y.d.output(y.t)
	}
	return ""
}

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
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
	"github.com/disinto/disinto/tests/internal/rig"
)

// system is one project provisioned by `disinto init` on a fresh Gitea,
// with its daemon running against the scripted model server.
type system struct {
	*rig.Install
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
	d       *rig.Daemon
}

// newInstall is disinto installed as an operator has it, in a directory
// of the test's: every command runs with PATH and a private HOME, nothing
// inherited from the test process.
func newInstall(t testing.TB) *rig.Install {
	t.Helper()
	// As root the daemon gives each model session a uid of its own, which
	// must be able to pass through to its workspace in the data dir.
	in := rig.New(t, sandboxtest.Dir(t, "system"))
	home := filepath.Join(in.Dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	in.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "TZ=UTC"}
	return in
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
	srv := forgetest.Start(t)
	y := initSystem(t, srv, srv.URL, o, scenarios...)
	envVals, err := config.ReadEnvFile(y.EnvFile)
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
	y.start(t, grace)
	return y
}

// initSystem provisions the project on srv, reached at forgeURL, as o
// says: init (with o's local bots), o's edit of the project file, config
// check; and sets the daemon's environment (o's added) for the scripted
// model server it starts with scenarios.
func initSystem(t *testing.T, srv *forgetest.Server, forgeURL string, o laneOptions, scenarios ...claudetest.Scenario) *system {
	t.Helper()
	cli := claudetest.RequireCLI(t)
	y := &system{Install: newInstall(t), srv: srv, listen: rig.FreeAddr(t), statusListen: rig.FreeAddr(t)}
	var modelURL string
	y.model, modelURL = claudetest.Start(t, scenarios...)

	y.initArgs = []string{"init", "--yes", "--forge-url", forgeURL, "--admin-user", srv.AdminLogin,
		"--admin-password", srv.AdminPassword, "--repo", "acme/widgets", "--source", sourceRepo(t),
		"--webhook-url", "http://" + y.listen + "/hooks/forgejo", "--wait-forge", "0s"}
	for _, lb := range o.localBots {
		y.initArgs = append(y.initArgs, "--local-bot", lb)
	}
	y.MustRun(t, nil, y.initArgs...)
	if !o.dashboard {
		edit := o.project
		o.project = func(text string) string {
			// A top-level key: before the file's first table.
			text = "dashboard = false\n" + text
			if edit != nil {
				text = edit(text)
			}
			return text
		}
	}
	if o.project != nil {
		files, err := filepath.Glob(filepath.Join(y.Projects, "*.toml"))
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
	if out := y.MustRun(t, nil, "config", "check"); !strings.Contains(out, "1 project(s)") {
		t.Fatalf("config check: %s", out)
	}
	y.daemonEnv = append(rig.ModelEnv(modelURL, cli, filepath.Join(y.Dir, "claude-home")),
		"POLL_INTERVAL=3600", "CLAUDE_MAX_SESSIONS=2", "CLAUDE_TIMEOUT=240")
	y.daemonEnv = append(y.daemonEnv, o.env...)
	return y
}

// start starts `disinto daemon` with grace for running sessions at
// shutdown, and waits until it serves.
func (y *system) start(t *testing.T, grace time.Duration) {
	t.Helper()
	y.d = y.Start(t, rig.DaemonOptions{Env: y.daemonEnv, Listen: y.listen, StatusListen: y.statusListen, Grace: grace})
	y.d.AwaitAddrs(t)
	httpGet(t, "http://"+y.listen+"/healthz")
}

// died reports why the daemon is gone, or "" while it runs.
func (y *system) died() string { return y.d.Died() }

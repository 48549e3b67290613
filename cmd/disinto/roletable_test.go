package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/scheduler"
	"github.com/disinto/disinto/lib/webhook"
)

// TestEveryRoleHasAConstructor: each row of the role table is built by
// one constructor of the registry, and the registry builds no role the
// table lacks.
func TestEveryRoleHasAConstructor(t *testing.T) {
	reg := agentRegistry()
	for _, s := range config.RoleSpecs() {
		if reg[s.Name] == nil {
			t.Errorf("role %s has no constructor", s.Name)
		}
	}
	for r := range reg {
		if _, ok := config.SpecOf(r); !ok {
			t.Errorf("constructor of %s, which the role table lacks", r)
		}
	}
}

// toy is a role this module does not ship: one row of the role table and
// a constructor are all it takes to be scheduled, routed, provisioned,
// checked and shown.
var toy = config.RoleSpec{
	Name: "toy", Scheduled: true, Interval: 2 * time.Hour, IntervalEnv: "TOY_INTERVAL", Stagger: 7 * time.Second,
	Start: config.StartAtOnce, Project: config.AccessRead, Ops: config.AccessRead, Scopes: config.ReaderScopes,
	Wakes: []string{"issue_comment"}, WakesOnOps: true, StateDir: "toy",
}

// registerToy adds the toy role to the table until the test ends. The
// table is process-wide: tests that register roles are never parallel.
func registerToy(t *testing.T) daemon.Registry {
	t.Helper()
	unregister, err := config.RegisterRole(toy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unregister)
	if _, err := config.RegisterRole(toy); err == nil {
		t.Fatal("the toy role registered twice")
	}
	reg := agentRegistry()
	reg[toy.Name] = func(daemon.Deps) (agent.Agent, error) { return sessionAgent{}, nil }
	return reg
}

func TestToyRoleIsScheduledAndRouted(t *testing.T) {
	reg := registerToy(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "projects", "alpha.toml"), "name = \"alpha\"\nrepo = \"acme/alpha\"\n")
	env := []string{"AGENT_ROLES=toy", "TOY_INTERVAL=3600",
		"FORGE_TOY_TOKEN=t-toy-0123456789", "FORGE_TOY_PASS=p-toy", "DISINTO_WEBHOOK_SECRET=s3cret-hook"}
	a, d := testDaemon(t, filepath.Join(dir, "projects"), env, reg)

	// Scheduled: its job, at the cadence its variable sets, in its place
	// of the project's slot, at every start.
	jobs := d.Scheduler().Snapshot()
	if len(jobs) != 1 || jobs[0].Project != "alpha" || jobs[0].Role != "toy" || jobs[0].Interval != time.Hour {
		t.Fatalf("jobs %+v, want alpha/toy every hour", jobs)
	}

	// Routed: the event its row names, on the project's repository, and
	// any event of the ops repository, wake its job through the daemon's
	// own receiver.
	for _, repo := range []string{"acme/alpha", "acme/alpha-ops"} {
		_, d := testDaemon(t, filepath.Join(dir, "projects"), env, reg) // no trigger pending
		body := `{"action":"created","issue":{"number":3},"comment":{"body":"hi"},"repository":{"full_name":"` + repo + `"}}`
		req := httptest.NewRequest(http.MethodPost, webhook.Path, strings.NewReader(body))
		req.Header.Set("X-Forgejo-Event", "issue_comment")
		req.Header.Set("X-Forgejo-Signature", webhook.Sign([]byte("s3cret-hook"), []byte(body)))
		w := httptest.NewRecorder()
		d.HookHandler().ServeHTTP(w, req)
		if jobs := d.Scheduler().Snapshot(); w.Code != http.StatusAccepted || jobs[0].TriggerAt.IsZero() {
			t.Errorf("an issue comment on %s: status %d, job %+v; want the toy job triggered", repo, w.Code, jobs[0])
		}
	}

	// Shown: the daemon's status lists its job with its cadence, and so
	// does status from the data dir once it has run; completion offers it.
	var shown bool
	for _, j := range d.Status().Jobs {
		shown = shown || j.Project+"/"+j.Role == "alpha/toy" && j.Interval == time.Hour
	}
	if !shown {
		t.Errorf("status jobs %+v lack alpha/toy", d.Status().Jobs)
	}
	store, err := scheduler.OpenStore(a.layout().Schedule())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put("alpha/toy", scheduler.JobState{LastStart: time.Now(), LastEnd: time.Now()}); err != nil {
		t.Fatal(err)
	}
	shown = false
	offline, err := a.offlineStatus()
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range offline.Jobs {
		shown = shown || j.Project+"/"+j.Role == "alpha/toy" && j.Interval == time.Hour
	}
	if !shown {
		t.Errorf("offline status jobs %+v lack alpha/toy", offline.Jobs)
	}
	if code, out, errOut := runCLI(t, nil, "__complete", "run", ""); code != exitOK || !strings.Contains(out, "toy\n") {
		t.Errorf("completion: exit %d, %q %s", code, out, errOut)
	}
}

// TestToyRoleIsProvisionedAndChecked: disinto init gives the toy role its
// bot, token and permissions as its row says, and doctor checks that
// token like every other.
func TestToyRoleIsProvisionedAndChecked(t *testing.T) {
	if testing.Short() {
		t.Skip("real forge: skipped under -short")
	}
	registerToy(t)
	srv := forgetest.Start(t)
	dir := t.TempDir()
	envFile, projects := filepath.Join(dir, "config", ".env"), filepath.Join(dir, "config", "projects")
	env := []string{"FORGE_URL=" + srv.URL, "FORGE_ADMIN_USER=" + srv.AdminLogin, "FORGE_ADMIN_PASS=" + srv.AdminPassword}
	code, out, errOut := runCLI(t, env, "init", "--yes", "--repo", "acme/toyland", "--source", gitRepo(t),
		"--projects-dir", projects, "--env-file", envFile)
	if code != exitOK {
		t.Fatalf("init: code %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "toy-bot") {
		t.Errorf("init's report does not name toy-bot:\n%s", out)
	}
	cfg, err := config.Load(projects, envFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cfg.Bot(toy.Name)
	if err != nil || b.Fallback || b.User != "toy-bot" {
		t.Fatalf("toy bot %+v, %v: want toy-bot's own token", b, err)
	}
	admin := srv.Admin(t)
	perm, err := admin.Repo("acme", "toyland").CollaboratorPermission(t.Context(), "toy-bot")
	if err != nil || perm != "read" {
		t.Errorf("toy-bot's permission on the project: %q, %v; want read", perm, err)
	}

	code, out, errOut = runCLI(t, []string{"AGENT_ROLES=dev,review,toy"}, "doctor", "--projects-dir", projects,
		"--env-file", envFile, "--data-dir", sessionDataDir(t))
	if !strings.Contains(out, "FORGE_TOY_TOKEN: authenticates as toy-bot with read:repository, read:user, write:issue (toyland/toy)") {
		t.Errorf("doctor (exit %d) does not check the toy role's token:\n%s\n%s", code, out, errOut)
	}
}

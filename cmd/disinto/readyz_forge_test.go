package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

// repoAgent stands in for a polling agent: each tick reads the project's
// repository from the forge, so a forge that is down fails every tick.
type repoAgent struct {
	url, token, owner, name string
	ticks                   *atomic.Int64
}

func (a repoAgent) Tick(ctx context.Context, _ *agent.Run) error {
	a.ticks.Add(1)
	c, err := forge.New(forge.Options{URL: a.url, Token: a.token, MaxRetries: -1, HTTPClient: &http.Client{Timeout: 5 * time.Second}})
	if err != nil {
		return err
	}
	_, err = c.Repo(a.owner, a.name).Get(ctx)
	return err
}

// TestReadyzFollowsTheForge runs the daemon's scheduler and status
// listener against the real Gitea behind a proxy that can take it down:
// /readyz is 200, turns 503 naming the forge within two ticks of the forge
// stopping, and 200 again once it is back; disinto_forge_up follows.
func TestReadyzFollowsTheForge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a forge")
	}
	srv := forgetest.Start(t)
	owner := srv.NewUser(t, "owner")
	repo := srv.NewRepo(t, owner, "widgets")
	proxy := forgetest.NewProxy(t, srv.URL)
	own, name, _ := strings.Cut(repo.Slug(), "/")

	dir := t.TempDir()
	// Project "ready" has an 8 s slot (ProjectSlot): the first tick comes
	// soon after start.
	writeFile(t, filepath.Join(dir, "projects", "ready.toml"),
		"name = \"ready\"\nrepo = \""+repo.Slug()+"\"\nforge_url = \""+proxy.URL+"\"\n[roles.dev]\ninterval = \"1s\"\n")
	var ticks atomic.Int64
	reg := daemon.Registry{config.RoleDev: func(d daemon.Deps) (agent.Agent, error) {
		return repoAgent{url: d.Project.ForgeURL, token: owner.Token, owner: own, name: name, ticks: &ticks}, nil
	}}
	_, d := testDaemon(t, filepath.Join(dir, "projects"), []string{"AGENT_ROLES=dev"}, reg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Scheduler().Run(ctx, ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	status := httptest.NewServer(d.StatusHandler())
	t.Cleanup(status.Close)

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(status.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	forgeUp := func() float64 {
		t.Helper()
		_, body := get("/metrics")
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("parse /metrics: %v", err)
		}
		v, ok := gauge(fams["disinto_forge_up"], "project", "ready")
		if !ok {
			t.Fatalf("no disinto_forge_up for ready in:\n%s", body)
		}
		if _, ok := gauge(fams["disinto_job_last_success_timestamp_seconds"], "role", "dev"); !ok {
			t.Errorf("no last success of the dev job in:\n%s", body)
		}
		if fam := fams["disinto_build_info"]; fam == nil || len(fam.GetMetric()) != 1 {
			t.Errorf("no disinto_build_info in:\n%s", body)
		}
		return v
	}

	waitFor(t, "a successful tick and /readyz 200", time.Minute, func() bool {
		code, _ := get("/readyz")
		job := d.Scheduler().Snapshot()[0]
		return code == http.StatusOK && !job.LastEnd.IsZero() && job.LastError == ""
	})
	if up := forgeUp(); up != 1 {
		t.Fatalf("disinto_forge_up = %v with the forge up", up)
	}

	if err := proxy.SetDown(true); err != nil {
		t.Fatal(err)
	}
	before := ticks.Load()
	var body string
	waitFor(t, "/readyz 503 with the forge down", time.Minute, func() bool {
		var code int
		code, body = get("/readyz")
		return code == http.StatusServiceUnavailable
	})
	if n := ticks.Load() - before; n > 2 {
		t.Errorf("/readyz turned 503 only after %d ticks with the forge down", n)
	}
	if !strings.Contains(body, "forge "+proxy.URL+" unreachable") {
		t.Errorf("/readyz body does not name the forge: %q", body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d with the forge down; liveness must not follow the forge", code)
	}
	if up := forgeUp(); up != 0 {
		t.Errorf("disinto_forge_up = %v with the forge down", up)
	}

	if err := proxy.SetDown(false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "/readyz 200 with the forge back", time.Minute, func() bool {
		code, _ := get("/readyz")
		return code == http.StatusOK
	})
	if up := forgeUp(); up != 1 {
		t.Errorf("disinto_forge_up = %v with the forge back", up)
	}
}

// gauge returns the value of the series of fam whose label key is value.
func gauge(fam *dto.MetricFamily, key, value string) (float64, bool) {
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == key && l.GetValue() == value {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

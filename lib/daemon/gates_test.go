package daemon

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger/ledgertest"
	"github.com/disinto/disinto/lib/redact"
)

// fakeForge answers /api/v1/user with 401 while rejecting is set, and
// /api/v1/version while up is set.
type fakeForge struct {
	rejecting, down atomic.Bool
	users           atomic.Int32
}

func (f *fakeForge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case f.down.Load():
		http.Error(w, "down", http.StatusBadGateway)
	case r.URL.Path == "/api/v1/version":
		_, _ = w.Write([]byte(`{"version":"1.26.0"}`))
	case r.URL.Path == "/api/v1/user":
		f.users.Add(1)
		if f.rejecting.Load() {
			http.Error(w, `{"message":"token is invalid"}`, http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"id":2,"login":"review-bot"}`))
	default:
		http.NotFound(w, r)
	}
}

// TestGateHoldsBackARejectedToken: a rejected token closes the gate with
// one error line, its jobs are listed as disabled, further checks say
// nothing, and the gate opens (once said) when the token works again.
func TestGateHoldsBackARejectedToken(t *testing.T) {
	ff := &fakeForge{}
	ff.rejecting.Store(true)
	srv := httptest.NewServer(ff)
	t.Cleanup(srv.Close)
	var logs bytes.Buffer
	var gs gates
	bot := config.Bot{Role: config.RoleReview, User: "review-bot", Token: "tok-0123456789", TokenVar: "FORGE_REVIEW_TOKEN"}
	g := gs.of(srv.URL, bot, "proj/review", srv.Client(), zerolog.New(&logs))
	for range 3 {
		if err := g.check(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if !g.isClosed() {
		t.Fatal("a rejected token left the gate open")
	}
	if n := strings.Count(logs.String(), `"level":"error"`); n != 1 || !strings.Contains(logs.String(), "FORGE_REVIEW_TOKEN rejected") {
		t.Fatalf("%d error lines for three rejections, want 1 naming the variable:\n%s", n, logs.String())
	}
	if d := gs.disabled(); len(d) != 1 || d[0].Project != "proj" || d[0].Role != "review" {
		t.Fatalf("disabled = %+v", d)
	}
	if strings.Contains(logs.String(), bot.Token) {
		t.Error("the token reached the log")
	}
	// A forge that is down says nothing about the token.
	ff.down.Store(true)
	if err := g.check(t.Context()); err == nil || !g.isClosed() {
		t.Fatalf("check against a down forge: %v, closed %v", err, g.isClosed())
	}
	ff.down.Store(false)
	ff.rejecting.Store(false)
	if err := g.check(t.Context()); err != nil || g.isClosed() {
		t.Fatalf("a working token did not open the gate: %v", err)
	}
	if !strings.Contains(logs.String(), "authenticates again") || len(gs.disabled()) != 0 {
		t.Errorf("reopening not said, or still disabled: %+v", gs.disabled())
	}
}

// TestReadiness: /readyz is 503 while a job is disabled, while the forge
// does not answer, and while a job has failed every run for too long.
func TestReadiness(t *testing.T) {
	ff := &fakeForge{}
	srv := httptest.NewServer(ff)
	t.Cleanup(srv.Close)
	p := &config.Project{Name: "proj", ForgeURL: srv.URL}
	d := &Daemon{Core: &Core{Config: &config.Config{Projects: []*config.Project{p}, Policy: config.Policy{UnhealthyAfter: time.Hour}},
		Runtime:  agent.New(agent.Options{Ledger: &ledgertest.Memory{}, Log: zerolog.Nop()}),
		Services: &Services{HTTP: srv.Client()}, Redactor: redact.New()}}
	d.ready.d = d
	get := func() (int, string) {
		t.Helper()
		rec := httptest.NewRecorder()
		d.ready.serve(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(); code != http.StatusOK || body != "ready\n" {
		t.Fatalf("healthy daemon: %d %q", code, body)
	}

	ff.rejecting.Store(true)
	g := d.gates.of(srv.URL, config.Bot{User: "review-bot", Token: "t", TokenVar: "FORGE_REVIEW_TOKEN"}, "proj/review", srv.Client(), zerolog.Nop())
	if err := g.check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "proj review disabled: FORGE_REVIEW_TOKEN rejected") {
		t.Fatalf("with a rejected token: %d %q", code, body)
	}
	ff.rejecting.Store(false)
	_ = g.check(t.Context())

	ff.down.Store(true)
	d.ready.probed = nil // forget the cached answer
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "unreachable") {
		t.Fatalf("with the forge down: %d %q", code, body)
	}
	ff.down.Store(false)
	d.ready.probed = nil

	failing := func(context.Context, *agent.Run) error { return forge.ErrUnavailable }
	_ = d.Runtime.Tick(t.Context(), tickFunc(failing), p, config.RoleDev, agent.CauseSchedule)
	if code, _ := get(); code != http.StatusOK {
		t.Fatalf("one failed run made the daemon unready: %d", code)
	}
	d.Config.Policy.UnhealthyAfter = 0
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "proj dev: every run failed since") {
		t.Fatalf("with a job failing for too long: %d %q", code, body)
	}
}

type tickFunc func(ctx context.Context, run *agent.Run) error

func (f tickFunc) Tick(ctx context.Context, run *agent.Run) error { return f(ctx, run) }

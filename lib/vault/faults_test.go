package vault_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/vault"
)

// TestDispatchTransientForge is spec 70 §5.11 scenario 10: a 502 from the
// reviews endpoint writes no result and the action runs next cycle.
func TestDispatchTransientForge(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.requestApproved("a1")
	proxy := forgetest.NewProxy(t, r.srv.URL)
	fc, err := forge.New(forge.Options{URL: proxy.URL, Token: r.vault.Token, User: r.vault.Login, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	name, email := git.Identity(r.vault.Login)
	run := &countingRunner{}
	d, err := vault.NewDispatcher(vault.DispatcherOptions{
		Ops: r.checkout(r.vault, filepath.Join(t.TempDir(), "ops")), Forge: fc.Repo(r.admin.Login, r.name), Formulas: formulas,
		Vault: vault.Identity{Name: name, Email: email}, Admins: []string{r.admin.Login}, Runner: run,
		Secrets: secretMap{"GITHUB_TOKEN": token}, Redactor: redact.New(), Instance: "t",
	})
	if err != nil {
		t.Fatal(err)
	}
	proxy.SetChaos(forgetest.Chaos{FailRate: 1, FailStatus: http.StatusBadGateway,
		Match: func(req *http.Request) bool { return strings.HasSuffix(req.URL.Path, "/reviews") }})
	es, err := d.Cycle(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, es, "a1"); e.State != vault.StatePending || !strings.Contains(e.Reason, "checking approval") || run.count("a1") != 0 {
		t.Fatalf("entry %+v, runs %d", e, run.count("a1"))
	}
	if _, ok := r.result("a1"); ok {
		t.Fatal("a result was recorded")
	}
	proxy.SetChaos(forgetest.Chaos{})
	if _, err := d.Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if run.count("a1") != 1 {
		t.Fatalf("runs %d", run.count("a1"))
	}
}

// flakyRunner fails to start its first run, then times out.
type flakyRunner struct{ calls atomic.Int32 }

var errNoEngine = errors.New("docker engine unreachable")

func (f *flakyRunner) Run(context.Context, vault.Job) (vault.Outcome, error) {
	if f.calls.Add(1) == 1 {
		return vault.Outcome{}, errNoEngine
	}
	return vault.Outcome{ExitCode: 137, TimedOut: true, Logs: "stopped after 1m"}, nil
}

// TestDispatchRunnerDidNotStart: a runner that ran nothing leaves the
// action pending (the claim withdrawn), the next cycle runs it, and a run
// stopped at its timeout is recorded as a timeout (§5.11 scenario 8, as
// the dispatcher sees it).
func TestDispatchRunnerDidNotStart(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.requestApproved("a1")
	run := &flakyRunner{}
	d := r.dispatcher(t.TempDir(), run, secretMap{"GITHUB_TOKEN": token})
	es, err := d.Cycle(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, es, "a1"); e.State != vault.StateReady || !strings.Contains(e.Reason, "did not start") {
		t.Fatalf("entry %+v", e)
	}
	if _, ok := r.result("a1"); ok {
		t.Fatal("the claim was not withdrawn")
	}
	if _, err := d.Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, ok := r.result("a1")
	if !ok || res.Status != vault.StatusTimeout || res.ExitCode != 137 || run.calls.Load() != 2 {
		t.Fatalf("result %+v, calls %d", res, run.calls.Load())
	}
}

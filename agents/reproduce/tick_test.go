package reproduce

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger/ledgertest"
	"github.com/disinto/disinto/lib/runner"
)

// heldRunner is a sidecar that runs until released.
type heldRunner struct {
	scriptedRunner
	started chan struct{}
	release chan struct{}
}

func (h *heldRunner) Run(ctx context.Context, j runner.Job) (runner.Outcome, error) {
	h.started <- struct{}{}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return h.scriptedRunner.Run(ctx, j)
}

// Spec 95 §4.4 §1: one sidecar starts for a bug report; while it still
// runs, the next cycle starts no second one. Its end is one ledger record.
func TestTickStartsOneSidecarAtATime(t *testing.T) {
	g := newRig(t)
	i := g.issue("Header overlaps", "Open /.", forge.LabelBugReport)
	h := &heldRunner{scriptedRunner: scriptedRunner{answer: answer(`{"outcome": "cannot-reproduce", "findings": "Fine here."}`)},
		started: make(chan struct{}, 4), release: make(chan struct{})}
	a := g.agent(h, nil)
	led := &ledgertest.Memory{}
	rt := agent.New(agent.Options{Ledger: led, Log: zerolog.New(zerolog.NewTestWriter(t))})
	p := &config.Project{Name: "bugs", Repo: g.repo.Slug()}
	ctx := g.ctx()
	if err := rt.Tick(ctx, a, p, config.RoleReproduce, agent.CauseSchedule); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.started:
	case <-time.After(time.Minute):
		t.Fatal("no sidecar started")
	}
	if err := rt.Tick(ctx, a, p, config.RoleReproduce, agent.CauseSchedule); err != nil {
		t.Fatal(err)
	}
	if rep := a.Report(); len(rep.Items) != 1 || rep.Items[0].Issue != i.Number || rep.Items[0].Stage != "reproduce running" {
		t.Errorf("report %+v: want the bug report's running sidecar", rep)
	}
	close(h.release)
	if err := rt.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(h.jobs); n != 1 {
		t.Fatalf("%d sidecars ran, want one", n)
	}
	if j := h.jobs[0]; j.ID != "reproduce-"+itoa(i.Number) || j.Kind != runner.Mechanical {
		t.Errorf("job %s kind %s", j.ID, j.Kind)
	}
	recs := led.Records()
	if len(recs) != 1 || recs[0].Issue != i.Number || recs[0].Code != "reproduce.cannot-reproduce" {
		t.Errorf("ledger %+v: want one record of the run", recs)
	}
	g.wantLabels(i.Number, forge.LabelBugReport, forge.LabelRejected)
}

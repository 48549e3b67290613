package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
)

// startWork is an agent whose tick starts one piece of work that runs
// until release is closed.
type startWork struct{ release chan struct{} }

func (s startWork) Tick(ctx context.Context, run *agent.Run) error {
	run.Go(ctx, "issue-7", func(context.Context) { <-s.release })
	return nil
}

// The runtime's heartbeats feed the supervisor, its own left out.
func TestRuntimeHeartbeats(t *testing.T) {
	rt := agent.New(agent.Options{})
	p := &config.Project{Name: "p"}
	w := startWork{release: make(chan struct{})}
	if err := rt.Tick(ctxT(t), w, p, config.RoleDev, agent.CauseManual); err != nil {
		t.Fatal(err)
	}
	if err := rt.Tick(ctxT(t), startWork{release: w.release}, p, config.RoleSupervisor, agent.CauseManual); err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(w.release)
		_ = rt.Wait(ctxT(t))
	}()
	hs := RuntimeHeartbeats{Runtime: rt, Project: "p"}.Heartbeats()
	if len(hs) != 1 || hs[0].Agent != "dev" || hs[0].Key != "issue-7" || hs[0].StartedAt.IsZero() || time.Since(hs[0].LastProgressAt) > time.Minute {
		t.Fatalf("heartbeats = %+v", hs)
	}
	if other := (RuntimeHeartbeats{Runtime: rt, Project: "q"}).Heartbeats(); len(other) != 0 {
		t.Fatalf("another project's heartbeats: %+v", other)
	}
}

package daemon

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
)

type failTick struct{ err error }

func (f failTick) Tick(context.Context, *agent.Run) error { return f.err }

// A job disabled for its rejected token runs no more: its last failure is
// not reported as a failing streak besides the disabled job (status listed
// it in both, and /readyz would have called it failing every run).
func TestDisabledJobIsNotFailing(t *testing.T) {
	d := &Daemon{Core: &Core{Runtime: agent.New(agent.Options{Log: zerolog.Nop()})}}
	p := &config.Project{Name: "widgets"}
	_ = d.Runtime.Tick(t.Context(), failTick{&forge.StatusError{Status: 401}}, p, config.RoleReview, agent.CauseSchedule)
	_ = d.Runtime.Tick(t.Context(), failTick{forge.ErrUnavailable}, p, config.RoleDev, agent.CauseSchedule)
	g := d.gates.of("http://forge", config.Bot{User: "review-bot", TokenVar: "FORGE_REVIEW_TOKEN"}, "widgets/review", nil, zerolog.Nop())
	g.close("FORGE_REVIEW_TOKEN rejected by http://forge")
	f := d.failing()
	if len(f) != 1 || f[0].Role != "dev" {
		t.Errorf("failing = %+v, want only the dev job", f)
	}
	if len(d.gates.disabled()) != 1 {
		t.Errorf("disabled = %+v", d.gates.disabled())
	}
}

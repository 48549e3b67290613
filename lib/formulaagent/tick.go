package formulaagent

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/ledger"
)

// Role is what a formula role adds to the runtime's tick: what it watches
// beyond the primary branch and the issues, and the work of a run.
type Role interface {
	// Begin is called under the role's lock, after the watch, with
	// r.Obs.Why what the watch saw change ("" when nothing did). It reads
	// whatever else the role watches and returns the body of the run and
	// why it runs; a nil body skips the run.
	Begin(ctx context.Context, r *Run) (Body, string, error)
}

// Body is the work of a run that goes ahead. An error ends the run with
// no watermark (the next run looks again) and no record of the runtime's
// (the agent runtime records the failure).
type Body func(ctx context.Context, r *Run) (Outcome, error)

// Outcome is how a run that succeeded ends.
type Outcome struct {
	// Record returns the run's ledger record, asked once the watermark is
	// left (a Settle may add to what the run did); nil when the role
	// records its own.
	Record func() ledger.Record
	// Timer is the earliest timer the run left (zero: none): from then on
	// the watch sees the timer due.
	Timer time.Time
	// Settle, when set, leaves the watermark in place of the runtime
	// (which saves what the watch saw before the run, with Timer).
	Settle func(ctx context.Context) error
}

// Run is one run of a role, as the runtime hands it to the role.
type Run struct {
	*agent.Run
	// Obs is what the watch saw before the run.
	Obs Observation
	// Me is the role bot's login and Log the run's logger (with why it
	// runs), both set before the body runs.
	Me  string
	Log zerolog.Logger
	r   *Driver
}

// Identity returns the role bot's login (for a Begin that needs it).
func (r *Run) Identity(ctx context.Context) (string, error) { return r.r.Identity(ctx) }

// Tick is one run of role: under the project's lock (a run that finds it
// held is skipped), the watch, the role's own look (Begin), the bot's
// identity, the body, then the watermark and the ledger record.
func (r *Driver) Tick(ctx context.Context, run *agent.Run, role Role) error {
	log := run.Logger()
	unlock, err := Lock(r.o.StateDir)
	if errors.Is(err, ErrBusy) {
		log.Info().Str("reason", err.Error()).Msg(r.o.Role + " run skipped")
		return nil
	}
	if err != nil {
		return err
	}
	defer unlock()
	obs, err := r.watch.Changed(ctx, r.Now())
	if err != nil {
		return err
	}
	rn := &Run{Run: run, Obs: obs, r: r}
	body, why, err := role.Begin(ctx, rn)
	if err != nil {
		return err
	}
	if body == nil {
		log.Debug().Msg("nothing changed since the last " + r.o.Role + " run")
		return nil
	}
	if rn.Me, err = r.Identity(ctx); err != nil {
		return err
	}
	rn.Log = log.With().Str("why", why).Logger()
	out, err := body(ctx, rn)
	if err != nil {
		return err
	}
	if out.Settle != nil {
		err = out.Settle(ctx)
	} else {
		err = r.watch.Save(obs, out.Timer)
	}
	if err != nil || out.Record == nil {
		return err
	}
	return run.Record(out.Record())
}

// SessionRecord is the ledger record of a run that ran session res, with
// what the role says of it.
func SessionRecord(rec ledger.Record, res claude.Result) ledger.Record {
	rec.SessionID, rec.CostUSD, rec.Turns = res.SessionID, res.CostUSD, res.NumTurns
	rec.InputTokens, rec.OutputTokens = res.Usage.InputTokens, res.Usage.OutputTokens
	return rec
}

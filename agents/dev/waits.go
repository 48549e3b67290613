package dev

import (
	"context"
	"fmt"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/text"
)

// followPull is what every waiting step does first: it finds the issue's
// pull request and ends the run when it was merged or closed under us, or
// is not the agent's; a new head (someone pushed) restarts the wait for
// CI. moved reports that st left its stage, so the step is over.
func (a *Agent) followPull(ctx context.Context, snap *snapshot, st *State) (moved bool, err error) {
	pr, ok := snap.own[st.Branch]
	if !ok || (st.PR != 0 && pr.Number != st.PR) {
		got, err := a.o.Forge.GetPull(ctx, st.PR)
		if err != nil {
			return false, err
		}
		pr = got
	}
	if !ours(pr, snap.me, st.Branch) {
		// Only a state written before ownership was checked can point here.
		return true, a.block(ctx, st, codeForeignPull, fmt.Sprintf("pull request #%d was opened by %s from %s, not by the dev agent from %s; it is never merged",
			pr.Number, pr.Author, pr.HeadRepo, st.Branch), "")
	}
	switch {
	case pr.Merged:
		return true, a.merged(ctx, st, pr.MergedSHA)
	case pr.State != forge.StateOpen:
		return true, a.block(ctx, st, ledger.Code("pr.closed_externally"), fmt.Sprintf("pull request #%d was closed without merging", pr.Number), "")
	}
	// The next step of this tick needs it again.
	snap.own[st.Branch] = pr
	if pr.HeadSHA == st.HeadSHA || (st.RebasedFrom != "" && pr.HeadSHA == st.RebasedFrom) {
		return false, nil
	}
	// Someone pushed: whatever was known about the old head is moot.
	from := st.Stage
	st.HeadSHA = pr.HeadSHA
	if err := a.move(st, StageAwaitingCI); err != nil {
		return false, err
	}
	return st.Stage != from, nil
}

// overdue escalates st once it has waited limit or longer for what (CI or
// review) on its head. A wait without a start (a state written before
// waits were timed) starts now.
func (a *Agent) overdue(ctx context.Context, st *State, limit time.Duration, code ledger.Code, what string) error {
	if st.WaitingSince.IsZero() {
		st.WaitingSince = a.o.Now()
		return a.st.save(*st)
	}
	waited := a.o.Now().Sub(st.WaitingSince)
	if waited < limit {
		return nil
	}
	return a.escalate(ctx, st, code, fmt.Sprintf("No %s result for %s of pull request #%d after %s (limit %s).",
		what, text.ShortSHA(st.HeadSHA), st.PR, waited.Round(time.Second), limit))
}

package dev

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/deps"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/logx"
)

// otherWorkflow labels mark issues owned by another workflow: the dev agent
// neither picks nor repairs them (a vision issue in progress never blocks
// dev work).
var otherWorkflow = []forge.LabelName{
	forge.LabelBugReport, forge.LabelVision, forge.LabelInTriage, forge.LabelAction,
	forge.LabelFormula, forge.LabelPredictionUnreviewed, forge.LabelPredictionDismissed,
}

// notReady labels keep a backlog issue out of the queue (W-DP-11).
var notReady = []forge.LabelName{forge.LabelBlocked, forge.LabelUnderspecified, forge.LabelInProgress}

func hasAny(i forge.Issue, names []forge.LabelName) bool {
	for _, n := range names {
		if i.HasLabel(n) {
			return true
		}
	}
	return false
}

// snapshot is the forge state read once per tick, with the tick's run.
type snapshot struct {
	run   runHandle
	log   zerolog.Logger
	me    string
	open  map[int64]forge.Issue
	order []forge.Issue
	pulls []forge.PullRequest
	// own holds the agent's own open pull requests by head branch; pulls
	// by others on a branch of the same name are not in it.
	own map[string]forge.PullRequest
	// deps is the tick's dependency gate (see deps.go), nil until used.
	deps *depGate
}

func newSnapshot(me string, issues []forge.Issue, pulls []forge.PullRequest) *snapshot {
	s := &snapshot{log: zerolog.Nop(), me: me, open: map[int64]forge.Issue{}, order: issues, pulls: pulls, own: map[string]forge.PullRequest{}}
	for _, i := range issues {
		s.open[i.Number] = i
	}
	for _, p := range pulls {
		if !ours(p, me, p.Head) {
			continue
		}
		if cur, ok := s.own[p.Head]; !ok || p.Number > cur.Number {
			s.own[p.Head] = p
		}
	}
	return s
}

// Tick is one reconciliation pass. It costs two list requests when there is
// nothing to do (open issues, open pull requests; a scheduled tick shares
// the latter with the project's other roles when Options.Pulls is set,
// which then often costs nothing); waiting issues add a
// status or review lookup each, and a backlog issue whose dependency wait
// changed a comment write. Sessions it starts keep running under ctx
// after Tick returns.
func (a *Agent) Tick(ctx context.Context, run *agent.Run) error {
	return a.tick(ctx, run, run.Cause == agent.CauseSchedule)
}

// tick is Tick on h; reuse allows a shared listing of pull requests read
// recently (see openPulls).
func (a *Agent) tick(ctx context.Context, h runHandle, reuse bool) error {
	me, err := a.identity(ctx)
	if err != nil {
		return err
	}
	issues, err := a.openIssues(ctx)
	if err != nil {
		return err
	}
	pulls, err := a.openPulls(ctx, reuse)
	if err != nil {
		return err
	}
	snap := newSnapshot(me, issues, pulls)
	snap.run, snap.log = h, h.Logger()
	a.drainMirrors(ctx, h)
	a.mergeChores(ctx, snap)

	// 1. Advance the issues this agent holds: merges of approved green
	// pull requests come first, then CI and review waits, then sessions
	// interrupted by a restart.
	tracked, err := a.st.list()
	if err != nil {
		return err
	}
	var errs []error
	have := map[int64]bool{}
	ended := map[int64]bool{} // states that were terminal before this tick
	lost := a.renewLeases(ctx, snap, tracked)
	for _, n := range tracked {
		have[n] = true
		if lost[n] || h.Busy(workKey(n)) {
			continue
		}
		st, ok, err := a.st.load(n)
		if err != nil || !ok {
			errs = append(errs, err)
			continue
		}
		st.run = h
		ended[n] = st.Stage.Terminal()
		if err := a.advanceBounded(ctx, snap, &st); err != nil {
			errs = append(errs, fmt.Errorf("issue #%d: %w", n, err))
		}
	}
	// 2. Adopt work a lost state directory left on the forge, and own
	// in-progress issues whose state ended (a resume from blocked that was
	// interrupted before its state was saved).
	for _, i := range snap.order {
		if (have[i.Number] && !ended[i.Number]) || !i.HasLabel(forge.LabelInProgress) || !i.AssignedTo(me) || hasAny(i, otherWorkflow) {
			continue
		}
		if ended[i.Number] {
			// The listing may predate a block of this tick: confirm.
			cur, err := a.o.Forge.GetIssue(ctx, i.Number)
			if err != nil {
				errs = append(errs, fmt.Errorf("adopt #%d: %w", i.Number, err))
				continue
			}
			if !cur.HasLabel(forge.LabelInProgress) || !cur.AssignedTo(me) || cur.HasLabel(forge.LabelBlocked) || cur.State != forge.StateOpen {
				continue
			}
			i = cur
		}
		if ok, err := a.mayAdopt(ctx, snap, i); err != nil || !ok {
			if err != nil {
				errs = append(errs, fmt.Errorf("adopt #%d: %w", i.Number, err))
			}
			have[i.Number] = true
			continue
		}
		if err := a.adopt(ctx, snap, i); err != nil {
			errs = append(errs, fmt.Errorf("adopt #%d: %w", i.Number, err))
		}
		have[i.Number] = true
	}
	// 3. Stale in-progress issues: unassigned, dev-owned, no pull request.
	// An issue with a live state of this agent is not stale: the listing
	// predates this tick's work on it (a merge finished after a restart
	// clears the assignee before it closes the issue).
	for _, i := range snap.order {
		if have[i.Number] && !ended[i.Number] {
			continue
		}
		if err := a.repairStale(ctx, snap, i); err != nil {
			errs = append(errs, fmt.Errorf("stale #%d: %w", i.Number, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// 4. Dependency cycles and waits of the backlog are published whether
	// or not there is room for new work.
	if err := a.gateDeps(ctx, snap); err != nil {
		return err
	}
	if err := a.pruneOriginWaits(snap); err != nil {
		return err
	}
	// 5. Per-agent gate, then the queue.
	if n := a.inFlight(snap); n >= a.lim.InFlight {
		snap.log.Debug().Int("in_flight", n).Msg("holding new work: own work in flight")
		return nil
	}
	if a.o.Ready != nil {
		if err := a.o.Ready(ctx); err != nil {
			snap.log.Debug().Str("error", a.red.Error(err)).Msg("holding new work: not ready")
			return nil
		}
	}
	return a.pick(ctx, snap)
}

// inFlight counts this agent's unfinished issues: live states and open pull
// requests of own issues that are neither blocked nor queued again (an own
// issue sent back to the backlog is what pick resumes, so its pull request
// must not hold it back).
func (a *Agent) inFlight(snap *snapshot) int {
	count := 0
	seen := map[int64]bool{}
	nums, _ := a.st.list()
	for _, n := range nums {
		st, ok, err := a.st.load(n)
		if err == nil && ok && !st.Stage.Terminal() {
			count++
			seen[n] = true
		}
	}
	for _, p := range snap.own {
		n := issueOfBranch(p.Head)
		if n == 0 || seen[n] {
			continue
		}
		i, ok := snap.open[n]
		if ok && i.AssignedTo(snap.me) && !hasAny(i, []forge.LabelName{forge.LabelBlocked, forge.LabelUnderspecified, forge.LabelBacklog}) {
			count++
			seen[n] = true
		}
	}
	return count
}

// issueOfBranch returns N of fix/issue-N (or fix/issue-N-k), else 0.
func issueOfBranch(head string) int64 {
	rest, ok := strings.CutPrefix(head, "fix/issue-")
	if !ok {
		return 0
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		rest = rest[:i]
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// adopt rebuilds the state of an own in-progress issue from the forge, or
// resumes its ended state as pick does.
func (a *Agent) adopt(ctx context.Context, snap *snapshot, i forge.Issue) error {
	st, carried, err := a.newRun(ctx, snap, i)
	if err != nil {
		return err
	}
	if st.Origin, err = a.judge.Issue(ctx, i); err != nil {
		return err
	}
	to := StageImplementing
	if carried {
		to = StageResuming
	} else if pr, ok := snap.ownPullOf(i.Number); ok {
		st.Branch, st.PR, st.HeadSHA = pr.Head, pr.Number, pr.HeadSHA
		to = StageAwaitingCI
	}
	if i.HasLabel(forge.LabelBacklog) {
		if err := a.o.Forge.RemoveLabels(ctx, i.Number, forge.LabelBacklog); err != nil {
			return err
		}
	}
	a.issueLog(st).Info().Bool("resumed", carried).Msg("adopting in-progress issue without live local state")
	if err := a.move(&st, to); err != nil {
		return err
	}
	return a.advance(ctx, snap, &st)
}

// newRun returns the state a run on issue i starts from, at StageNone.
// When the issue has an ended state (the way back from blocked or
// escalated), its branch, pull request and session are carried over with
// the budgets reset, unless that pull request was closed unmerged: then
// the run is a fresh attempt (see abandoned).
func (a *Agent) newRun(ctx context.Context, snap *snapshot, i forge.Issue) (st State, carried bool, err error) {
	old, ok, err := a.st.load(i.Number)
	if err != nil {
		return State{}, false, err
	}
	st = a.newState(i)
	st.run = snap.run
	if ok {
		old.run = snap.run
		fresh, err := a.abandoned(ctx, old)
		if err != nil || fresh {
			return st, false, err
		}
		st.Branch, st.Worktree, st.SessionID, st.PR = old.Branch, old.Worktree, old.SessionID, old.PR
	}
	return st, ok, nil
}

// newState is a fresh run's state of issue i.
func (a *Agent) newState(i forge.Issue) State {
	return State{Issue: i.Number, Title: i.Title, Branch: branchFor(i.Number, 1), Started: a.o.Now()}
}

// repairStale relabels an unassigned in-progress issue nobody works on.
func (a *Agent) repairStale(ctx context.Context, snap *snapshot, i forge.Issue) error {
	if !i.HasLabel(forge.LabelInProgress) || len(i.Assignees) > 0 || hasAny(i, otherWorkflow) {
		return nil
	}
	if _, ok := snap.ownPullOf(i.Number); ok {
		return nil
	}
	if a.o.Now().Sub(i.Updated) < a.lim.ClaimGrace {
		return nil // freshly claimed: the claimer assigns itself next
	}
	body := fmt.Sprintf("### Stale in-progress issue detected\n\n| | |\n|---|---|\n| Detection reason | `no_assignee_no_open_pr` |\n| Timestamp | %s |\n\n"+
		"**Status:** this issue was labelled `in-progress` with no assignee and no open pull request.\n\n"+
		"**Action required:** a maintainer should triage it and re-add `backlog` when it is ready.",
		a.o.Now().UTC().Format("2006-01-02T15:04:05Z"))
	if _, err := a.o.Forge.CreateComment(ctx, i.Number, body); err != nil {
		return err
	}
	if err := a.o.Forge.AddLabels(ctx, i.Number, forge.LabelBlocked); err != nil {
		return err
	}
	snap.log.Warn().Int64(logx.KeyIssue, i.Number).Msg("stale in-progress issue relabelled blocked")
	return a.o.Forge.RemoveLabels(ctx, i.Number, forge.LabelInProgress)
}

// candidates returns the ready backlog issues in queue order: priority
// first, then oldest first.
func (a *Agent) candidates(snap *snapshot) []forge.Issue {
	refused := a.loadRefusals()
	var out []forge.Issue
	for _, i := range snap.order {
		if !queueable(snap, i) || a.blockedByDeps(snap, i) {
			continue
		}
		if r, ok := refused[i.Number]; ok && r.Body == bodyHash(i.Body) {
			if _, open := snap.open[r.Dependency]; open || r.Dependency == 0 {
				continue // same text, same refusal: do not pay for it again
			}
		}
		out = append(out, i)
	}
	sort.SliceStable(out, func(x, y int) bool {
		px, py := out[x].HasLabel(forge.LabelPriority), out[y].HasLabel(forge.LabelPriority)
		if px != py {
			return px
		}
		return out[x].Number < out[y].Number
	})
	return out
}

// blockedByDeps reports whether i waits for a dependency: one still open
// (an open issue or pull request: they share numbers), or one the tick's
// dependency gate holds it for (a cycle, a won't-fix or missing
// dependency). Others count as closed here; pick confirms them.
func (a *Agent) blockedByDeps(snap *snapshot, i forge.Issue) bool {
	if snap.deps != nil && snap.deps.held[i.Number] {
		return true
	}
	for _, d := range deps.ParseFor(i.Number, i.Body) {
		if _, open := snap.open[d]; open || snap.openPull(d) {
			return true
		}
	}
	return false
}

// openPull reports whether n is the number of an open pull request.
func (s *snapshot) openPull(n int64) bool {
	for _, p := range s.pulls {
		if p.Number == n {
			return true
		}
	}
	return false
}

// pick claims ready candidates in queue order and starts their sessions,
// until the agent works InFlight issues.
func (a *Agent) pick(ctx context.Context, snap *snapshot) error {
	for _, i := range a.candidates(snap) {
		if !a.depsConfirmed(ctx, snap, i) {
			continue
		}
		origin, ok, err := a.admit(ctx, snap, i)
		switch {
		case err != nil && (ctx.Err() != nil || errors.Is(err, forge.ErrUnavailable)):
			return err
		case err != nil:
			// Unproven origin claims nothing; the other issues go on.
			snap.log.Warn().Int64(logx.KeyIssue, i.Number).Str("error", a.red.Error(err)).Msg("origin not established; not claiming it")
			continue
		case !ok:
			continue
		}
		if i.AssignedTo(snap.me) {
			// Already ours (a blocked issue sent back to the backlog).
			if err := a.o.Forge.AddLabels(ctx, i.Number, forge.LabelInProgress); err != nil {
				return err
			}
			if err := a.o.Forge.RemoveLabels(ctx, i.Number, forge.LabelBacklog); err != nil {
				return err
			}
		} else if _, err := a.o.Forge.Claim(ctx, i.Number, a.bots()); err != nil {
			if errors.Is(err, forge.ErrClaimed) {
				snap.log.Info().Int64(logx.KeyIssue, i.Number).Msg("claim lost; trying the next issue")
				continue
			}
			return fmt.Errorf("claim #%d: %w", i.Number, err)
		}
		a.newLease(ctx, snap, i.Number)
		st, carried, err := a.newRun(ctx, snap, i)
		if err != nil {
			return err
		}
		st.Origin = origin
		to := StageImplementing
		if carried {
			to = StageResuming
		}
		if err := a.move(&st, to); err != nil {
			return err
		}
		a.issueLog(st).Info().Str("origin", string(origin)).Msg("claimed")
		if err := a.advance(ctx, snap, &st); err != nil || a.inFlight(snap) >= a.lim.InFlight {
			return err
		}
	}
	return nil
}

func bodyHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// advanceBounded advances st (see advance). A step that keeps failing for a
// reason other than an unavailable forge or shutdown blocks the issue after
// maxAfterFailures ticks, with the error in the diagnostic, instead of
// failing every tick forever.
func (a *Agent) advanceBounded(ctx context.Context, snap *snapshot, st *State) error {
	before := st.AdvanceFailures
	err := a.advance(ctx, snap, st)
	switch {
	case err == nil:
		if before > 0 {
			if cur, ok, lerr := a.st.load(st.Issue); lerr == nil && ok && cur.AdvanceFailures > 0 {
				cur.AdvanceFailures = 0
				return a.st.save(cur)
			}
		}
		return nil
	case ctx.Err() != nil, errors.Is(err, forge.ErrUnavailable):
		return err
	}
	cur, ok, lerr := a.st.load(st.Issue)
	if lerr != nil || !ok || cur.Stage.Terminal() {
		return err
	}
	cur.run = st.run
	cur.AdvanceFailures++
	if cur.AdvanceFailures > maxAfterFailures {
		if berr := a.block(ctx, &cur, ledger.Code("engine.advance_failed"), "Advancing this issue kept failing.", a.red.Error(err)); berr != nil {
			return errors.Join(err, berr)
		}
		return nil
	}
	if serr := a.st.save(cur); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

package dev

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/logx"
)

// Leases let several replicas act as one dev bot. The bot's assignment
// and the in-progress label say that the bot holds an issue, not which
// process works on it; after a project moved to another replica (one
// died, or the count changed) the new owner adopts the bot's in-progress
// issues from the forge, as after a restart with a lost data dir. A
// replica that still works on such an issue (the old owner, not yet
// stopped) must not have it adopted under it. So with leases on, the
// holder keeps one lease comment on each issue it works, naming its
// instance and renewed while the work goes on; another instance adopts
// the issue only once that lease has not been renewed for a lease period,
// and says so in one comment, which is its own lease from then on. The
// former holder, should it come back, finds a newer lease of another
// instance and lets the issue go.

// leaseKind is the marker of a lease comment:
// <!-- disinto:dev-lease instance=<id> renewed=<unix seconds> -->.
const leaseKind = "dev-lease"

// leaseBook is what this instance knows of its own leases.
type leaseBook struct {
	mu sync.Mutex
	m  map[int64]leaseRec
}

type leaseRec struct {
	comment int64
	renewed time.Time
}

func (b *leaseBook) get(n int64) (leaseRec, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.m[n]
	return r, ok
}

func (b *leaseBook) set(n int64, r leaseRec) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[int64]leaseRec{}
	}
	b.m[n] = r
}

func (b *leaseBook) drop(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, n)
}

// leasing reports whether the agent keeps leases.
func (a *Agent) leasing() bool { return a.o.Lease > 0 && a.o.Instance != "" }

// lease is a lease comment as read from the forge.
type lease struct {
	comment  forge.Comment
	instance string
	renewed  time.Time
}

// latestLease returns the newest lease comment the agent's own login
// wrote on issue n (anyone may post a look-alike; only the bot's count).
func (a *Agent) latestLease(ctx context.Context, n int64, me string) (lease, bool, error) {
	cs, err := a.o.Forge.ListComments(ctx, n)
	if err != nil {
		return lease{}, false, err
	}
	var out lease
	found := false
	for _, c := range cs {
		if !strings.EqualFold(c.Author, me) || (found && c.ID < out.comment.ID) {
			continue
		}
		m, ok := c.MarkerBy(leaseKind, me)
		if !ok || m.Fields["instance"] == "" {
			continue
		}
		secs, _ := strconv.ParseInt(m.Fields["renewed"], 10, 64)
		out, found = lease{comment: c, instance: m.Fields["instance"], renewed: time.Unix(secs, 0)}, true
	}
	return out, found, nil
}

// leaseBody is a lease comment: text for people, then the marker.
func (a *Agent) leaseBody(text string, now time.Time) (string, error) {
	m, err := forge.Marker{Kind: leaseKind, Fields: map[string]string{
		"instance": a.o.Instance, "renewed": strconv.FormatInt(now.Unix(), 10)}}.String()
	if err != nil {
		return "", err
	}
	return text + "\n\n" + m, nil
}

// newLease posts this instance's lease on issue n, which it has just
// claimed. A failure is only logged: the lease is posted at the next
// renewal, and until then the issue's fresh update keeps adopters off.
func (a *Agent) newLease(ctx context.Context, snap *snapshot, n int64) {
	if !a.leasing() {
		return
	}
	text := fmt.Sprintf("Worked on by instance `%s`, which renews this claim while the work goes on; "+
		"if it stops renewing for %s, another replica takes the issue over.", a.o.Instance, a.o.Lease)
	if _, err := a.postLease(ctx, n, text); err != nil {
		snap.log.Warn().Int64(logx.KeyIssue, n).Str("error", a.red.Error(err)).Msg("could not post the claim's lease; posting it at the next renewal")
	}
}

func (a *Agent) postLease(ctx context.Context, n int64, text string) (forge.Comment, error) {
	now := a.o.Now()
	body, err := a.leaseBody(text, now)
	if err != nil {
		return forge.Comment{}, err
	}
	c, err := a.o.Forge.CreateComment(ctx, n, body)
	if err != nil {
		return forge.Comment{}, err
	}
	a.leases.set(n, leaseRec{comment: c.ID, renewed: now})
	return c, nil
}

// mayAdopt reports whether this instance may adopt in-progress issue i,
// which the bot holds and this instance has no live state of: always
// without leases; with them, when the issue's newest lease is this
// instance's, or has not been renewed for a lease period (then it takes
// the issue over with one comment), or when there is none and the issue
// has not changed for a lease period (a claim from before leases, or
// whose claimer died before posting its lease).
func (a *Agent) mayAdopt(ctx context.Context, snap *snapshot, i forge.Issue) (bool, error) {
	if !a.leasing() {
		return true, nil
	}
	l, ok, err := a.latestLease(ctx, i.Number, snap.me)
	if err != nil {
		return false, err
	}
	now := a.o.Now()
	switch {
	case ok && l.instance == a.o.Instance:
		a.leases.set(i.Number, leaseRec{comment: l.comment.ID, renewed: l.renewed})
		return true, nil
	case ok && now.Sub(l.renewed) < a.o.Lease:
		snap.log.Debug().Int64(logx.KeyIssue, i.Number).Str("holder", l.instance).Msg("in-progress issue held by another instance")
		return false, nil
	case !ok && now.Sub(i.Updated) < a.o.Lease:
		snap.log.Debug().Int64(logx.KeyIssue, i.Number).Msg("in-progress issue without a lease changed lately; waiting a lease period before adopting it")
		return false, nil
	}
	text := fmt.Sprintf("Taking this issue over: it is in progress without a holder, so instance `%s` resumes it from what the forge shows.", a.o.Instance)
	if ok {
		text = fmt.Sprintf("Taking this issue over: instance `%s` has not renewed its claim since %s (lease %s), so instance `%s` resumes it from what the forge shows.",
			l.instance, l.renewed.UTC().Format(time.RFC3339), a.o.Lease, a.o.Instance)
	}
	mine, err := a.postLease(ctx, i.Number, text)
	if err != nil {
		return false, err
	}
	if won, err := a.wonTakeover(ctx, snap, i.Number, l.comment.ID, mine); err != nil || !won {
		return false, err
	}
	snap.log.Warn().Int64(logx.KeyIssue, i.Number).Str("from", l.instance).Msg("took over an in-progress issue whose lease expired")
	return true, nil
}

// wonTakeover reports whether mine, a takeover posted after the lease
// comment after (0: none), is the first since: two replicas that both
// found the lease lapsed both post one, and the one the forge numbered
// first takes the issue (comment ids are totally ordered). The other
// deletes its comment and leaves the issue alone, so that the newest
// lease names the holder again.
func (a *Agent) wonTakeover(ctx context.Context, snap *snapshot, n, after int64, mine forge.Comment) (bool, error) {
	cs, err := a.o.Forge.ListComments(ctx, n)
	if err != nil {
		return false, err
	}
	for _, c := range cs {
		if c.ID <= after || c.ID >= mine.ID || !strings.EqualFold(c.Author, snap.me) {
			continue
		}
		if _, ok := c.MarkerBy(leaseKind, snap.me); !ok {
			continue
		}
		a.leases.drop(n)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := a.o.Forge.DeleteComment(dctx, mine.ID); err != nil && !errors.Is(err, forge.ErrNotFound) {
			return false, fmt.Errorf("withdraw a takeover another replica beat: %w", err)
		}
		snap.log.Info().Int64(logx.KeyIssue, n).Msg("another replica took the issue over first")
		return false, nil
	}
	return true, nil
}

// renewLeases renews the leases of the issues this instance works on
// (tracked, not ended), each once a quarter of the lease period, and
// returns those another instance has taken over meanwhile: the agent
// lets them go (their state is removed once no work of theirs runs).
func (a *Agent) renewLeases(ctx context.Context, snap *snapshot, tracked []int64) map[int64]bool {
	if !a.leasing() {
		return nil
	}
	lost := map[int64]bool{}
	now := a.o.Now()
	for _, n := range tracked {
		st, ok, err := a.st.load(n)
		if err != nil || !ok || st.Stage.Terminal() {
			a.leases.drop(n)
			continue
		}
		if r, ok := a.leases.get(n); ok && now.Sub(r.renewed) < a.o.Lease/4 {
			continue
		}
		if err := a.renewLease(ctx, snap, n, now); err != nil {
			if errors.Is(err, errLeaseLost) {
				lost[n] = true
				a.letGo(snap, n)
				continue
			}
			snap.log.Warn().Int64(logx.KeyIssue, n).Str("error", a.red.Error(err)).Msg("could not renew the lease")
		}
	}
	return lost
}

// errLeaseLost says another instance has taken an issue over.
var errLeaseLost = errors.New("lease taken over by another instance")

func (a *Agent) renewLease(ctx context.Context, snap *snapshot, n int64, now time.Time) error {
	l, ok, err := a.latestLease(ctx, n, snap.me)
	if err != nil {
		return err
	}
	if ok && l.instance != a.o.Instance {
		return errLeaseLost
	}
	if !ok {
		_, err := a.postLease(ctx, n, fmt.Sprintf("Worked on by instance `%s`, which renews this claim while the work goes on; "+
			"if it stops renewing for %s, another replica takes the issue over.", a.o.Instance, a.o.Lease))
		return err
	}
	text, _, _ := strings.Cut(l.comment.Body, "<!-- disinto:"+leaseKind)
	body, err := a.leaseBody(strings.TrimRight(text, "\n"), now)
	if err != nil {
		return err
	}
	if _, err := a.o.Forge.EditComment(ctx, l.comment.ID, body); err != nil {
		return err
	}
	a.leases.set(n, leaseRec{comment: l.comment.ID, renewed: now})
	return nil
}

// letGo drops this instance's state of issue n, which another instance
// has taken over; work of it still running keeps its state until it
// returns, and the next renewal lets it go then.
func (a *Agent) letGo(snap *snapshot, n int64) {
	a.leases.drop(n)
	if snap.run != nil && snap.run.Busy(workKey(n)) {
		snap.log.Warn().Int64(logx.KeyIssue, n).Msg("another instance took this issue over; letting it go once the running work returns")
		return
	}
	if err := a.st.remove(n); err != nil {
		snap.log.Warn().Int64(logx.KeyIssue, n).Str("error", a.red.Error(err)).Msg("could not drop the state of an issue taken over")
		return
	}
	snap.log.Warn().Int64(logx.KeyIssue, n).Msg("another instance took this issue over; its state here is dropped")
}

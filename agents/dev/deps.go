package dev

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/deps"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/logx"
)

// The dependency gate of the backlog. Each tick it builds the dependency
// graph of the queueable backlog issues from their bodies (no request),
// blocks every member of a dependency cycle (deps.cycle), and keeps one
// status comment on every issue that waits for a dependency, edited in
// place when what it waits for changes. A dependency is satisfied by an
// issue (or pull request) that is closed and not labelled wontfix; an open,
// missing or won't-fix one keeps its dependants waiting (W-DP-10).
//
// What was last published is kept per issue in <state>/dep-waits.json, so
// a tick in which no wait changed costs no request. Losing the file costs
// one comment listing per waiting issue: the comment is found again by its
// marker and author.
//
// When a waiting issue's dependencies are all satisfied, its comment is
// edited to say so and left in place: the issue keeps the record of what
// it waited for, and a dependency reopened later edits the same comment
// back.

// codeDepsCycle is the outcome of an issue blocked on a dependency cycle.
const codeDepsCycle = ledger.Code("deps.cycle")

// depRecheck is how long a dependency read closed (satisfying or as won't
// fix) or missing is trusted before it is read again: the listing of open
// issues shows a dependency reopening, but not a label change on a closed
// one.
const depRecheck = time.Hour

// depWhy says why a dependency is not satisfied.
type depWhy string

const (
	depOpen    depWhy = "open"    // an open issue
	depPull    depWhy = "pull"    // an open pull request
	depWontfix depWhy = "wontfix" // closed and labelled wontfix
	depMissing depWhy = "missing" // no such issue or pull request
)

// depWait is one unsatisfied dependency.
type depWait struct {
	N   int64  `json:"n"`
	Why depWhy `json:"why"`
}

// read reports whether learning w took reading the dependency itself (the
// open listing does not show it).
func (w depWait) read() bool { return w.Why == depWontfix || w.Why == depMissing }

// depRecord is what the agent last published about one issue's
// dependencies.
type depRecord struct {
	// Deps are the dependencies the issue declared; Waits the unsatisfied
	// ones the status comment names (none: it says they are satisfied).
	Deps  []int64   `json:"deps,omitempty"`
	Waits []depWait `json:"waits,omitempty"`
	// Comment is the status comment's id, 0 before the first.
	Comment int64 `json:"comment,omitempty"`
	// Confirmed are the dependencies read closed and satisfying at
	// Checked; won't-fix and missing Waits were read then too.
	Confirmed []int64   `json:"confirmed,omitempty"`
	Checked   time.Time `json:"checked,omitzero"`
	// Cycle is the cycle the issue was blocked for, CycleComment the
	// blocked comment, and CycleBlocked that labels and ledger followed.
	Cycle        []int64 `json:"cycle,omitempty"`
	CycleComment int64   `json:"cycle_comment,omitempty"`
	CycleBlocked bool    `json:"cycle_blocked,omitempty"`
}

// empty reports whether r records nothing worth keeping.
func (r depRecord) empty() bool { return r.Comment == 0 && r.CycleComment == 0 && len(r.Waits) == 0 }

// depGate is the dependency verdict of one tick, on its snapshot.
type depGate struct {
	recs  map[int64]depRecord
	dirty bool
	// held are issues kept out of the queue for more than an open
	// dependency in the listing: a cycle, a won't-fix or missing
	// dependency.
	held map[int64]bool
	// confirmed are issues whose dependencies were all read satisfied.
	confirmed map[int64]bool
}

func (g *depGate) put(n int64, r depRecord) {
	g.recs[n] = r
	g.dirty = true
}

// depView is one issue's dependencies as far as they are known.
type depView struct {
	deps      []int64
	waits     []depWait // by number
	confirmed []int64
	unread    []int64 // not open in the listing, not known: closed or missing
	checked   time.Time
}

// gate returns the tick's dependency gate, loading the records on first
// use.
func (a *Agent) gate(snap *snapshot) *depGate {
	if snap.deps == nil {
		snap.deps = &depGate{recs: a.loadDepRecords(snap), held: map[int64]bool{}, confirmed: map[int64]bool{}}
	}
	return snap.deps
}

// queueable reports whether i is a backlog issue the agent may take, its
// dependencies aside.
func queueable(snap *snapshot, i forge.Issue) bool {
	if !i.HasLabel(forge.LabelBacklog) || hasAny(i, otherWorkflow) || hasAny(i, notReady) {
		return false
	}
	// Another bot or a human holds it otherwise.
	return len(i.Assignees) == 0 || (len(i.Assignees) == 1 && i.Assignees[0] == snap.me)
}

// gateDeps blocks the dependency cycles of the queueable backlog and
// publishes the waits that changed. It returns an error only when the
// forge is unavailable or the tick is cancelled; other failures are logged
// and retried next tick.
func (a *Agent) gateDeps(ctx context.Context, snap *snapshot) error {
	g := a.gate(snap)
	for n := range g.recs {
		if _, open := snap.open[n]; !open {
			delete(g.recs, n)
			g.dirty = true
		}
	}
	queue := map[int64][]int64{}
	var issues []forge.Issue
	for _, i := range snap.order {
		if queueable(snap, i) {
			queue[i.Number] = deps.ParseFor(i.Number, i.Body)
			issues = append(issues, i)
		}
	}
	slices.SortFunc(issues, func(x, y forge.Issue) int { return cmp.Compare(x.Number, y.Number) })
	graph := deps.NewGraph(queue)
	var errs []error
	for _, set := range graph.Cycles() {
		for _, n := range set {
			g.held[n] = true
			if err := a.blockCycle(ctx, snap, n, graph.CycleThrough(n)); err != nil {
				errs = append(errs, fmt.Errorf("cycle of #%d: %w", n, err))
			}
		}
	}
	for _, i := range issues {
		if g.held[i.Number] {
			continue
		}
		if err := a.gateIssue(ctx, snap, i, queue[i.Number]); err != nil {
			errs = append(errs, fmt.Errorf("dependencies of #%d: %w", i.Number, err))
		}
	}
	if err := a.saveDepRecords(g); err != nil {
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
	if err == nil || ctx.Err() != nil || errors.Is(err, forge.ErrUnavailable) {
		return err
	}
	snap.log.Warn().Str("error", a.red.Error(err)).Msg("dependency status not published; retrying next tick")
	return nil
}

// gateIssue publishes what issue i waits for when that changed. The
// closed dependencies of an issue that waits, or waited, are read, so its
// comment follows even while the agent takes no new work; those of one
// that never waited are read by pick when its turn comes.
func (a *Agent) gateIssue(ctx context.Context, snap *snapshot, i forge.Issue, ds []int64) error {
	g := snap.deps
	rec := g.recs[i.Number]
	v := a.viewDeps(snap, rec, ds)
	if len(v.unread) > 0 {
		if len(v.waits) == 0 && rec.Comment == 0 {
			return nil
		}
		// About to publish, or published before: the comment must name
		// every unsatisfied dependency, so the closed ones are read (once
		// per depRecheck, as the record keeps what was read).
		if err := a.readDeps(ctx, &v); err != nil {
			return err
		}
	}
	switch {
	case len(v.waits) > 0:
		g.held[i.Number] = true
	case len(v.unread) == 0:
		g.confirmed[i.Number] = true
	}
	return a.publishDeps(ctx, snap, i, v, false)
}

// depsConfirmed reports whether every dependency of i is satisfied,
// reading those the listing does not show open (closed or missing ones) and
// publishing a wait it finds. An unreadable dependency counts as open.
func (a *Agent) depsConfirmed(ctx context.Context, snap *snapshot, i forge.Issue) bool {
	g := a.gate(snap)
	switch {
	case g.confirmed[i.Number]:
		return true
	case g.held[i.Number]:
		return false
	}
	v := a.viewDeps(snap, g.recs[i.Number], deps.ParseFor(i.Number, i.Body))
	if len(v.unread) > 0 {
		if err := a.readDeps(ctx, &v); err != nil {
			snap.log.Debug().Int64(logx.KeyIssue, i.Number).Str("error", a.red.Error(err)).Msg("dependency unreadable; counted as open")
			return false
		}
	}
	// Without a record (it was lost), a satisfied issue's old comment is
	// looked for once, at its claim, so it does not go on saying it waits.
	err := errors.Join(a.publishDeps(ctx, snap, i, v, true), a.saveDepRecords(g))
	if err != nil {
		snap.log.Warn().Int64(logx.KeyIssue, i.Number).Str("error", a.red.Error(err)).Msg("dependency status not published")
	}
	return len(v.waits) == 0
}

// viewDeps is what the listing and the record tell of dependencies ds: an
// open issue or pull request waits; a closed or missing one is known from
// a fresh record or left unread.
func (a *Agent) viewDeps(snap *snapshot, rec depRecord, ds []int64) depView {
	v := depView{deps: ds}
	fresh := !rec.Checked.IsZero() && a.o.Now().Sub(rec.Checked) < depRecheck
	if fresh {
		v.checked = rec.Checked
	}
	for _, d := range ds {
		if _, open := snap.open[d]; open {
			v.waits = append(v.waits, depWait{N: d, Why: depOpen})
			continue
		}
		if snap.openPull(d) {
			v.waits = append(v.waits, depWait{N: d, Why: depPull})
			continue
		}
		if fresh {
			if slices.Contains(rec.Confirmed, d) {
				v.confirmed = append(v.confirmed, d)
				continue
			}
			if k := slices.IndexFunc(rec.Waits, func(w depWait) bool { return w.N == d && w.read() }); k >= 0 {
				v.waits = append(v.waits, rec.Waits[k])
				continue
			}
		}
		v.unread = append(v.unread, d)
	}
	return v
}

// readDeps reads v's unread dependencies: closed and not won't-fix ones
// are confirmed, the others wait.
func (a *Agent) readDeps(ctx context.Context, v *depView) error {
	for _, d := range v.unread {
		di, err := a.o.Forge.GetIssue(ctx, d)
		switch {
		case errors.Is(err, forge.ErrNotFound):
			v.waits = append(v.waits, depWait{N: d, Why: depMissing})
		case err != nil:
			return fmt.Errorf("read dependency #%d: %w", d, err)
		case di.State != forge.StateClosed:
			v.waits = append(v.waits, depWait{N: d, Why: depOpen})
		case di.HasLabel(forge.LabelWontfix):
			v.waits = append(v.waits, depWait{N: d, Why: depWontfix})
		default:
			v.confirmed = append(v.confirmed, d)
		}
	}
	v.unread, v.checked = nil, a.o.Now()
	slices.Sort(v.confirmed)
	slices.SortFunc(v.waits, func(x, y depWait) int { return cmp.Compare(x.N, y.N) })
	return nil
}

// publishDeps records v for issue i and, when what it waits for changed,
// posts or edits its status comment and logs the change once. An issue
// that never waited gets no comment; with lookup, a satisfied one without
// a recorded comment has its comment looked for and edited if it has one.
func (a *Agent) publishDeps(ctx context.Context, snap *snapshot, i forge.Issue, v depView, lookup bool) error {
	g := a.gate(snap)
	rec := g.recs[i.Number]
	if !v.checked.IsZero() && (!v.checked.Equal(rec.Checked) || !slices.Equal(v.confirmed, rec.Confirmed)) {
		rec.Checked, rec.Confirmed = v.checked, v.confirmed
		if !rec.empty() || len(v.waits) > 0 {
			g.put(i.Number, rec)
		}
	}
	same := slices.Equal(rec.Waits, v.waits) && (len(v.waits) > 0 || slices.Equal(rec.Deps, v.deps))
	if (rec.Comment != 0 && same) || (rec.Comment == 0 && len(v.waits) == 0 && (!lookup || len(v.deps) == 0)) {
		return nil
	}
	id, err := a.upsertDepComment(ctx, snap, i.Number, rec.Comment, a.depBody(i.Number, v), len(v.waits) > 0)
	if err != nil || id == 0 {
		return err
	}
	rec.Comment, rec.Deps, rec.Waits = id, v.deps, v.waits
	g.put(i.Number, rec)
	log := snap.log.Info().Int64(logx.KeyIssue, i.Number).Str("deps", describeWaits(v.waits))
	if len(v.waits) == 0 {
		log.Msg("dependencies satisfied")
	} else {
		log.Msg("waiting on dependencies")
	}
	return nil
}

// describeWaits renders waits for a log line: "#12 (open), #15 (wontfix)".
func describeWaits(ws []depWait) string {
	parts := make([]string, len(ws))
	for k, w := range ws {
		parts[k] = fmt.Sprintf("#%d (%s)", w.N, w.Why)
	}
	return strings.Join(parts, ", ")
}

// depBody is the status comment of issue n.
func (a *Agent) depBody(n int64, v depView) string {
	var b strings.Builder
	refs := func(ns []int64) string {
		parts := make([]string, len(ns))
		for k, d := range ns {
			parts[k] = "#" + strconv.FormatInt(d, 10)
		}
		return strings.Join(parts, ", ")
	}
	if len(v.waits) == 0 {
		b.WriteString("### Dependencies satisfied\n\n")
		if len(v.deps) == 0 {
			b.WriteString("This issue no longer declares dependencies; the dev agent can take it.\n")
		} else {
			fmt.Fprintf(&b, "Every dependency of this issue is done (%s); the dev agent can take it.\n", refs(v.deps))
		}
	} else {
		ns := make([]int64, len(v.waits))
		for k, w := range v.waits {
			ns[k] = w.N
		}
		verb := "they are"
		if len(ns) == 1 {
			verb = "it is"
		}
		fmt.Fprintf(&b, "### Waiting on dependencies\n\nWaiting on %s: the dev agent takes this issue once %s done.\n\n", refs(ns), verb)
		for _, w := range v.waits {
			switch w.Why {
			case depOpen:
				fmt.Fprintf(&b, "- #%d is open.\n", w.N)
			case depPull:
				fmt.Fprintf(&b, "- #%d is an open pull request.\n", w.N)
			case depWontfix:
				fmt.Fprintf(&b, "- #%d was closed as won't fix, which does not satisfy a dependency: reopen and finish it, or drop it from this issue's dependencies.\n", w.N)
			case depMissing:
				fmt.Fprintf(&b, "- #%d does not exist.\n", w.N)
			}
		}
	}
	b.WriteString("\nThis comment is kept up to date as the dependencies change.\n")
	m, err := forge.Marker{Kind: forge.MarkerDepWait, Fields: map[string]string{"issue": strconv.FormatInt(n, 10)}}.String()
	if err == nil {
		b.WriteString(m)
	}
	return b.String()
}

// upsertDepComment edits the status comment id of issue n to body, finding
// it by marker and author when id is unknown, and with create posts one
// when there is none (or it was deleted). It returns the comment's id, 0
// when there is none.
func (a *Agent) upsertDepComment(ctx context.Context, snap *snapshot, n, id int64, body string, create bool) (int64, error) {
	if id == 0 {
		cs, err := a.o.Forge.ListComments(ctx, n)
		if err != nil {
			return 0, err
		}
		for _, c := range slices.Backward(cs) {
			m, ok := c.MarkerBy(forge.MarkerDepWait, snap.me)
			if ok && m.Fields["issue"] == strconv.FormatInt(n, 10) {
				if c.Body == body {
					return c.ID, nil
				}
				id = c.ID
				break
			}
		}
	}
	if id != 0 {
		c, err := a.o.Forge.EditComment(ctx, id, body)
		if err == nil {
			return c.ID, nil
		}
		if !errors.Is(err, forge.ErrNotFound) {
			return 0, err
		}
	}
	if !create {
		return 0, nil
	}
	c, err := a.o.Forge.CreateComment(ctx, n, body)
	if err != nil {
		return 0, err
	}
	return c.ID, nil
}

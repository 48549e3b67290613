// Package trackrecord counts how the pull requests the factory's roles
// opened fared, per role and autonomy level, so that an operator raises
// or lowers a level on evidence: over the last Window, how many were
// merged, how many of those were reverted or had their issue reopened
// within RevertWindow of the merge, and how many were closed without a
// merge.
//
// Everything is read from the forge, which every replica shares: the
// recently closed pull requests, the primary branch's recent history
// (a revert is a commit whose message says "This reverts commit <sha>",
// as git revert writes it, of the merge or of the pull request's head)
// and the timelines of the fixed issues. A pull request counts under
// the role whose bot opened it, from the base repository; its level is
// the one its autonomy marker names (the bot's own), or none for pull
// requests opened before the marker existed.
package trackrecord

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// The windows of the record.
const (
	// Window is how far back pull requests are counted.
	Window = 30 * 24 * time.Hour
	// RevertWindow is how soon after its merge a revert or a reopening
	// counts against a pull request.
	RevertWindow = 7 * 24 * time.Hour
)

// Forge is what the record reads of one repository. *forge.RepoClient
// implements it.
type Forge interface {
	RecentPulls(ctx context.Context, state forge.State, since time.Time) ([]forge.PullRequest, error)
	RecentCommits(ctx context.Context, ref string, since time.Time) ([]forge.Commit, error)
	Reopenings(ctx context.Context, n int64) ([]time.Time, error)
}

var _ Forge = (*forge.RepoClient)(nil)

// Row is the record of one role at one level.
type Row struct {
	Role string `json:"role"`
	// Level is the autonomy level; empty for pull requests that did not
	// name theirs.
	Level          string `json:"level,omitempty"`
	Merged         int    `json:"merged"`
	Reverted       int    `json:"reverted"`
	Reopened       int    `json:"reopened"`
	ClosedUnmerged int    `json:"closed_unmerged"`
}

// Record is the track record of one project.
type Record struct {
	Project string    `json:"project"`
	Since   time.Time `json:"since"`
	At      time.Time `json:"at"`
	// WindowDays and RevertDays are Window and RevertWindow in days, as
	// the record was read with them.
	WindowDays int   `json:"window_days"`
	RevertDays int   `json:"revert_days"`
	Rows       []Row `json:"rows"`
	// Reverted and Reopened name the merged pull requests counted as
	// such, for the operator to look at.
	Reverted []int64 `json:"reverted,omitempty"`
	Reopened []int64 `json:"reopened,omitempty"`
}

// Options say whose pull requests to count, where.
type Options struct {
	Project string
	Forge   Forge
	// Primary is the branch the pull requests merge into.
	Primary string
	// Roles maps each of the factory's bots (login, any case) to its role.
	Roles map[string]string
}

// Tracker computes a project's record again and again, keeping what can
// no longer change: whether a pull request merged longer than
// RevertWindow ago had its issue reopened in time.
type Tracker struct {
	o        Options
	roles    map[string]string
	reopened map[int64]bool
}

// New returns a Tracker for o.
func New(o Options) *Tracker {
	roles := make(map[string]string, len(o.Roles))
	for login, role := range o.Roles {
		roles[strings.ToLower(login)] = role
	}
	return &Tracker{o: o, roles: roles, reopened: map[int64]bool{}}
}

// revertRe finds the commits a revert names, as git revert writes it.
var revertRe = regexp.MustCompile(`(?i)\bThis reverts commit ([0-9a-f]{7,64})\b`)

// Compute reads the record as of now.
func (t *Tracker) Compute(ctx context.Context, now time.Time) (Record, error) {
	since := now.Add(-Window)
	rec := Record{Project: t.o.Project, Since: since, At: now,
		WindowDays: int(Window / (24 * time.Hour)), RevertDays: int(RevertWindow / (24 * time.Hour))}
	pulls, err := t.o.Forge.RecentPulls(ctx, forge.StateClosed, since)
	if err != nil {
		return rec, fmt.Errorf("track record of %s: %w", t.o.Project, err)
	}
	commits, err := t.o.Forge.RecentCommits(ctx, t.o.Primary, since)
	if err != nil {
		return rec, fmt.Errorf("track record of %s: %w", t.o.Project, err)
	}
	// reverts maps each reverted commit (as the revert abbreviates it)
	// to the earliest revert of it.
	reverts := map[string]time.Time{}
	for _, c := range commits {
		for _, m := range revertRe.FindAllStringSubmatch(c.Message, -1) {
			sha := strings.ToLower(m[1])
			if at, ok := reverts[sha]; !ok || c.Created.Before(at) {
				reverts[sha] = c.Created
			}
		}
	}
	rows := map[[2]string]*Row{}
	row := func(role, level string) *Row {
		k := [2]string{role, level}
		if rows[k] == nil {
			rows[k] = &Row{Role: role, Level: level}
		}
		return rows[k]
	}
	for _, p := range pulls {
		role, ok := t.roles[strings.ToLower(p.Author)]
		if !ok || p.FromFork {
			continue
		}
		level := ""
		if m, ok := p.MarkerBy(forge.MarkerAutonomy, p.Author); ok {
			level = m.Fields["level"]
		}
		switch {
		case !p.Merged:
			if !p.ClosedAt.Before(since) {
				row(role, level).ClosedUnmerged++
			}
			continue
		case p.MergedAt.Before(since):
			continue
		}
		r := row(role, level)
		r.Merged++
		if revertedWithin(reverts, p) {
			r.Reverted++
			rec.Reverted = append(rec.Reverted, p.Number)
		}
		reopened, err := t.issueReopened(ctx, p, now)
		if err != nil {
			return rec, fmt.Errorf("track record of %s: %w", t.o.Project, err)
		}
		if reopened {
			r.Reopened++
			rec.Reopened = append(rec.Reopened, p.Number)
		}
	}
	for _, r := range rows {
		rec.Rows = append(rec.Rows, *r)
	}
	sort.Slice(rec.Rows, func(i, j int) bool {
		if rec.Rows[i].Role != rec.Rows[j].Role {
			return rec.Rows[i].Role < rec.Rows[j].Role
		}
		return rec.Rows[i].Level < rec.Rows[j].Level
	})
	sort.Slice(rec.Reverted, func(i, j int) bool { return rec.Reverted[i] < rec.Reverted[j] })
	sort.Slice(rec.Reopened, func(i, j int) bool { return rec.Reopened[i] < rec.Reopened[j] })
	return rec, nil
}

// revertedWithin reports whether p's merge or head commit was reverted
// within RevertWindow of its merge.
func revertedWithin(reverts map[string]time.Time, p forge.PullRequest) bool {
	for abbrev, at := range reverts {
		for _, sha := range []string{p.MergedSHA, p.HeadSHA} {
			if sha != "" && strings.HasPrefix(strings.ToLower(sha), abbrev) && !at.Before(p.MergedAt) && at.Sub(p.MergedAt) <= RevertWindow {
				return true
			}
		}
	}
	return false
}

// issueReopened reports whether an issue merged pull request p fixes
// (its bot's issue reference) was reopened within RevertWindow of the
// merge. Once that window has passed the answer is kept.
func (t *Tracker) issueReopened(ctx context.Context, p forge.PullRequest, now time.Time) (bool, error) {
	if v, ok := t.reopened[p.Number]; ok {
		return v, nil
	}
	found := false
	for _, ref := range p.RefMarkersBy(forge.RefDisintoIssue, p.Author) {
		n, err := strconv.ParseInt(ref, 10, 64)
		if err != nil || n <= 0 {
			continue
		}
		times, err := t.o.Forge.Reopenings(ctx, n)
		if err != nil {
			return false, err
		}
		for _, at := range times {
			if !at.Before(p.MergedAt) && at.Sub(p.MergedAt) <= RevertWindow {
				found = true
			}
		}
	}
	if now.Sub(p.MergedAt) > RevertWindow {
		t.reopened[p.Number] = found
	}
	return found, nil
}

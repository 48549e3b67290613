package dev

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/provenance"
)

// The provenance gate of the backlog. An issue whose text is an
// outsider's (lib/provenance: its author has no write access, or a bot
// derived it from an outsider's text and says so in its origin marker)
// is claimed only when the latest application of backlog to it was a
// maintainer's: a bot's (the gardener promoting it, the reproduce agent
// filing it, this agent putting it back) is no maintainer's word,
// except the dev bot's own application that a maintainer asked for by
// ticking the issue's box on the dashboard (its retried comment, posted
// just before, says so). The issue is told once why it waits, in one
// comment of the agent's.
//
// What the agent knows of each waiting issue is kept in
// <state>/origin-waits.json, so that an issue that did not change is not
// read again every tick; losing the file costs a timeline read and a
// comment listing per waiting issue (the comment is found again by its
// marker and author).

// originRecheck is how long after an issue's last update the agent keeps
// reading its timeline although the update time did not change: the forge
// dates updates to the second, so a label applied in the second of the
// agent's read would not move it. A read that late sees every earlier
// update, whatever the two clocks' small difference.
const originRecheck = time.Minute

// originWait is what the agent knows of one issue that waits for a
// maintainer.
type originWait struct {
	// Comment is the id of the comment that says why, 0 before it is
	// posted.
	Comment int64 `json:"comment,omitempty"`
	// Seen is the issue's update time at the last read of its timeline,
	// Checked (the agent's clock) when that read was.
	Seen    time.Time `json:"seen"`
	Checked time.Time `json:"checked"`
	// Since is when the agent first found it waiting.
	Since time.Time `json:"since"`
}

func (a *Agent) originWaitsPath() string { return filepath.Join(a.st.root, "origin-waits.json") }

// admit decides whether pick may claim i, and returns its origin. ok is
// false when the issue waits for a maintainer's backlog (and says so);
// an error is the forge's, and claims nothing this tick.
func (a *Agent) admit(ctx context.Context, snap *snapshot, i forge.Issue) (provenance.Origin, bool, error) {
	origin, err := a.judge.Issue(ctx, i)
	if err != nil {
		return "", false, fmt.Errorf("origin of #%d: %w", i.Number, err)
	}
	waits := a.loadOriginWaits(snap)
	rec, waited := waits[i.Number]
	if origin == provenance.Maintainer {
		if waited {
			delete(waits, i.Number)
			return origin, true, a.saveOriginWaits(waits)
		}
		return origin, true, nil
	}
	now := a.o.Now()
	if waited && rec.Comment != 0 && i.Updated.Equal(rec.Seen) && rec.Checked.Sub(rec.Seen) >= originRecheck {
		return origin, false, nil // nothing happened to it since it was last read
	}
	by, err := a.judge.LastApplied(ctx, i.Number, forge.LabelBacklog)
	if err != nil {
		return "", false, fmt.Errorf("who applied backlog to #%d: %w", i.Number, err)
	}
	claim := ""
	switch {
	case by.Maintainer && !strings.EqualFold(by.By.Login, snap.me):
		claim = "an outsider's issue a maintainer put in the backlog: claiming it"
	case strings.EqualFold(by.By.Login, snap.me):
		retried, err := a.retriedAt(ctx, snap, i.Number, by.At)
		if err != nil {
			return "", false, err
		}
		if retried {
			claim = "an outsider's issue a maintainer retried from the dashboard: claiming it"
		}
	}
	if claim != "" {
		snap.log.Info().Int64(logx.KeyIssue, i.Number).Str("by", by.By.Login).Msg(claim)
		if waited {
			delete(waits, i.Number)
			return origin, true, a.saveOriginWaits(waits)
		}
		return origin, true, nil
	}
	if !waited {
		snap.log.Info().Int64(logx.KeyIssue, i.Number).Str("backlog_by", by.By.Login).
			Msg("not claiming an outsider's issue until a maintainer applies backlog")
	}
	rec.Seen, rec.Checked = i.Updated, now
	if rec.Since.IsZero() {
		rec.Since = now
	}
	if rec.Comment == 0 {
		id, err := a.sayOriginWait(ctx, snap, i.Number, by.By.Login)
		if err != nil {
			return "", false, err
		}
		rec.Comment = id
	}
	waits[i.Number] = rec
	return origin, false, a.saveOriginWaits(waits)
}

// sayOriginWait posts the one comment on n that says why it is not worked,
// unless an earlier one of the agent's is there (a lost record), and
// returns its id.
func (a *Agent) sayOriginWait(ctx context.Context, snap *snapshot, n int64, by string) (int64, error) {
	cs, err := a.o.Forge.ListComments(ctx, n)
	if err != nil {
		return 0, err
	}
	for _, c := range cs {
		if m, ok := c.MarkerBy(forge.MarkerOriginWait, snap.me); ok && m.Fields["issue"] == fmt.Sprint(n) {
			return c.ID, nil
		}
	}
	who := "nobody yet"
	if by != "" {
		who = "`" + by + "`, not a maintainer"
	}
	m, err := forge.Marker{Kind: forge.MarkerOriginWait, Fields: map[string]string{"issue": fmt.Sprint(n)}}.String()
	if err != nil {
		return 0, err
	}
	body := fmt.Sprintf("⏸️ **Dev-agent: waiting for a maintainer**\n\n"+
		"The text of this issue comes from someone without write access to the repository (or was made from such text), "+
		"so the dev agent does not work it on a bot's word. The `backlog` label was last applied by %s.\n\n"+
		"**Action required:** a maintainer who wants it worked applies `backlog` themselves "+
		"(removing it first if it is there); the dev agent then picks it up.\n%s", who, m)
	c, err := a.o.Forge.CreateComment(ctx, n, body)
	if err != nil {
		return 0, err
	}
	return c.ID, nil
}

// readOriginWaits reads the records of the waiting issues; a missing file
// is none.
func (a *Agent) readOriginWaits() (map[int64]originWait, error) {
	out := map[int64]originWait{}
	data, err := os.ReadFile(a.originWaitsPath())
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err == nil {
		err = json.Unmarshal(data, &out)
	}
	return out, err
}

// loadOriginWaits reads the records of the waiting issues, without those
// no longer waiting (closed, out of the backlog, taken by someone); an
// unreadable file is none.
func (a *Agent) loadOriginWaits(snap *snapshot) map[int64]originWait {
	out, err := a.readOriginWaits()
	if err != nil {
		snap.log.Warn().Str("file", a.originWaitsPath()).Str("error", err.Error()).Msg("origin waits unreadable; starting afresh")
		return map[int64]originWait{}
	}
	for n := range out {
		if i, open := snap.open[n]; !open || !queueable(snap, i) {
			delete(out, n)
		}
	}
	return out
}

// pruneOriginWaits forgets the issues that no longer wait, so that status
// does not list them.
func (a *Agent) pruneOriginWaits(snap *snapshot) error {
	all, err := a.readOriginWaits()
	if err != nil || len(all) == 0 {
		return nil // an unreadable file is replaced by the next wait
	}
	if kept := a.loadOriginWaits(snap); len(kept) != len(all) {
		return a.saveOriginWaits(kept)
	}
	return nil
}

// originReport lists the issues that wait for a maintainer's backlog,
// for status.
func (a *Agent) originReport() []agent.Item {
	all, _ := a.readOriginWaits()
	out := make([]agent.Item, 0, len(all))
	for n, w := range all {
		out = append(out, agent.Item{Project: a.o.Project, Role: string(config.RoleDev), Issue: n,
			Stage: "waiting for a maintainer to apply backlog", Started: w.Since, Waiting: w.Since})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Issue < out[j].Issue })
	return out
}

// saveOriginWaits writes the records.
func (a *Agent) saveOriginWaits(waits map[int64]originWait) error {
	data, err := json.Marshal(waits)
	if err != nil {
		return fmt.Errorf("encode origin waits: %w", err)
	}
	if err := os.MkdirAll(a.st.root, 0o750); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if err := writeAtomic(a.originWaitsPath(), data); err != nil {
		return fmt.Errorf("write %s: %w", a.originWaitsPath(), err)
	}
	return nil
}

// retryWindow is how long before the dev bot's application of backlog the
// dashboard's retry comment may be: the dashboard posts it first, then
// moves the labels.
const retryWindow = time.Minute

// retriedAt reports whether the dev bot's application of backlog to n at
// at was the dashboard's retry: its comment with the retried marker, the
// dev bot's own, was posted just before. Only writers can tick the
// dashboard's boxes, so such an application is a maintainer's word.
func (a *Agent) retriedAt(ctx context.Context, snap *snapshot, n int64, at time.Time) (bool, error) {
	cs, err := a.o.Forge.ListComments(ctx, n)
	if err != nil {
		return false, fmt.Errorf("comments of #%d: %w", n, err)
	}
	for _, c := range cs {
		m, ok := c.MarkerBy(forge.MarkerRetried, snap.me)
		if !ok || m.Fields["issue"] != fmt.Sprint(n) {
			continue
		}
		// The forge dates both to the second.
		if !c.Created.Before(at.Add(-retryWindow)) && !c.Created.After(at.Add(time.Second)) {
			return true, nil
		}
	}
	return false, nil
}

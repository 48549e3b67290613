package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/wait"
)

// Remediation bounds.
const (
	// termGrace is how long a terminated process group has before it is
	// killed.
	termGrace = 10 * time.Second
	// keepLogs is how many rotated copies of an agent log are kept.
	keepLogs = 3
	// maxRemovalsPerRun bounds the worktrees and locks removed in one run.
	maxRemovalsPerRun = 20
)

// killGroup signals a process group.
func killGroup(pgid int, sig int) error { return syscall.Kill(-pgid, syscall.Signal(sig)) }

// remedyMemory pauses new agent runs and terminates the process groups of
// runs past their own deadline. A run within its deadline is never
// touched, and nothing is killed by name.
func remedyMemory(ctx context.Context, p *pass, f *Finding, rs *ruleState) verdict {
	if pz := p.a.o.Pauser; pz != nil && len(p.st.Paused) == 0 {
		roles, err := pz.PauseNewRuns()
		if err != nil || len(roles) > 0 {
			p.act(f, "paused new agent runs ("+joinRoles(roles)+")", 0, err)
		}
		if len(roles) > 0 {
			p.st.Paused = roles
		}
	} else if pz == nil {
		p.act(f, "cannot pause new agent runs: no scheduler hook", 0, nil)
	}
	for _, h := range p.snap.Agents {
		if h.PGID <= 1 || h.PGID == syscall.Getpgrp() || h.Deadline.IsZero() || !p.now.After(h.Deadline) {
			continue // never the daemon's own group, never a run within its deadline
		}
		err := p.a.terminate(ctx, h.PGID)
		p.act(f, fmt.Sprintf("terminated %s run %s (process group %d, %s past its deadline)", h.Agent, h.Key, h.PGID,
			p.now.Sub(h.Deadline).Round(time.Second)), 0, err)
	}
	return done
}

// resumeAfterMemory lifts the pause of a memory crisis that is over.
func (p *pass) resumeAfterMemory() {
	if len(p.st.Paused) == 0 || p.a.o.Pauser == nil {
		return
	}
	f := &Finding{Rule: RuleMemory}
	err := p.a.o.Pauser.ResumeNewRuns(p.st.Paused)
	p.act(f, "resumed new agent runs ("+joinRoles(p.st.Paused)+"): memory recovered", 0, err)
	if err == nil {
		p.st.Paused = nil
	}
}

// terminate sends SIGTERM to a process group, then SIGKILL when it
// outlives the grace.
func (a *Agent) terminate(ctx context.Context, pgid int) error {
	if err := a.o.kill(pgid, int(syscall.SIGTERM)); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("terminate process group %d: %w", pgid, err)
	}
	deadline := time.Now().Add(termGrace)
	for time.Now().Before(deadline) {
		if err := a.o.kill(pgid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if err := wait.For(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	if err := a.o.kill(pgid, int(syscall.SIGKILL)); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	return nil
}

// remedyDisk frees space step by step, measuring again after each, and
// stops as soon as every disk is back under the threshold: dangling
// images and the builder cache, then the agents' logs, then stale
// worktrees. Volumes and images in use are never pruned. Still above the
// threshold after every step: unfixable, escalate with the figures.
func remedyDisk(ctx context.Context, p *pass, f *Finding, rs *ruleState) verdict {
	if rs.coolingDown(p.now) {
		// The steps ran within the cooldown; persisting pressure is news.
		if rs.Remedied > 0 {
			return unfixable
		}
		return done
	}
	steps := []func(ctx context.Context, p *pass, f *Finding){pruneImages, rotateLogs, sweepWorktreesForDisk}
	for _, step := range steps {
		step(ctx, p, f)
		if !p.remeasure() {
			return fixed
		}
	}
	f.evidence = diskEvidence(p.snap.Disks)
	return unfixable
}

// remeasure measures the disks again and reports whether one is still
// above the critical threshold.
func (p *pass) remeasure() bool {
	still := false
	for i, d := range p.snap.Disks {
		if nd, err := p.a.o.Host.Disk(d.Path); err == nil {
			nd.What, nd.Path = d.What, d.Path
			p.snap.Disks[i] = nd
		}
		if p.snap.Disks[i].Pct > float64(p.cfg.DiskCritPct) {
			still = true
		}
	}
	return still
}

func diskEvidence(ds []Disk) string {
	var b strings.Builder
	sorted := append([]Disk(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Used > sorted[j].Used })
	for _, d := range sorted {
		fmt.Fprintf(&b, "- %s `%s`: %.0f%% (%s of %s)\n", d.What, d.Path, d.Pct, bytesText(d.Used), bytesText(d.Size))
	}
	return b.String()
}

func pruneImages(ctx context.Context, p *pass, f *Finding) {
	e := p.a.o.Engine
	if e == nil {
		return
	}
	n, err := e.PruneDangling(ctx, p.a.o.PruneLabels...)
	p.act(f, "pruned dangling images, reclaimed "+bytesText(n), n, err)
	n, err = e.PruneBuildCache(ctx, p.a.o.PruneLabels...)
	p.act(f, "pruned the build cache, reclaimed "+bytesText(n), n, err)
}

// rotateLogs rotates every log under the log dir larger than the limit:
// log → log.1 → … → log.<keepLogs>, the oldest dropped.
func rotateLogs(_ context.Context, p *pass, f *Finding) {
	dir := p.a.o.LogDir
	if dir == "" {
		return
	}
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
			return nil
		}
		fi, err := d.Info()
		if err != nil || !fi.Mode().IsRegular() || fi.Size() <= p.cfg.LogMaxBytes {
			return nil
		}
		n, err := rotate(path, fi.Size())
		p.act(f, "rotated "+path+", reclaimed "+bytesText(n), n, err)
		return nil
	})
}

// rotate shifts path's older copies up, moves path to path.1 and leaves
// an empty path for the writer; it returns the bytes the dropped copy
// held.
func rotate(path string, size int64) (uint64, error) {
	var freed uint64
	oldest := fmt.Sprintf("%s.%d", path, keepLogs)
	if fi, err := os.Stat(oldest); err == nil {
		freed = uint64(fi.Size())
	}
	for i := keepLogs - 1; i >= 1; i-- {
		_ = os.Rename(fmt.Sprintf("%s.%d", path, i), fmt.Sprintf("%s.%d", path, i+1))
	}
	// Copy then truncate: the writer keeps its file descriptor.
	src, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = src.Close() }()
	dst, err := os.OpenFile(path+".1", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	if _, err := io.CopyN(dst, src, size); err != nil && !errors.Is(err, io.EOF) {
		_ = dst.Close()
		return 0, err
	}
	if err := dst.Close(); err != nil {
		return 0, err
	}
	return freed, os.Truncate(path, 0)
}

// sweepWorktreesForDisk removes the stale worktrees now rather than in
// their own rule's turn.
func sweepWorktreesForDisk(ctx context.Context, p *pass, _ *Finding) {
	for _, f := range detectStaleWorktrees(p) {
		f.Rule, f.Severity = RuleStaleWorktree, P4
		if !p.removed[f.Key] {
			remedyWorktree(ctx, p, &f, &ruleState{})
		}
	}
}

// remedyWorktree removes a stale worktree through its clone and prunes the
// clone's worktree records. Held and preserved worktrees never get here;
// both are checked again just before removal.
func remedyWorktree(ctx context.Context, p *pass, f *Finding, _ *ruleState) verdict {
	if p.removals >= maxRemovalsPerRun || p.removed[f.Key] {
		return done
	}
	var w *WorktreeState
	for i := range p.snap.Worktrees {
		if p.snap.Worktrees[i].Dir == f.Key {
			w = &p.snap.Worktrees[i]
		}
	}
	if w == nil || p.a.o.Heartbeats == nil {
		// Without heartbeats nobody can tell whether an agent uses it.
		return done
	}
	r := git.New(git.Options{}).Open(w.Clone)
	if r.Preserved(ctx, w.Dir) || p.heldNow(w.Dir) {
		return done
	}
	p.removals++
	p.removed[f.Key] = true
	err := r.RemoveWorktree(ctx, w.Dir)
	p.act(f, "removed stale worktree "+w.Dir, 0, err)
	if err != nil {
		return done
	}
	return fixed
}

// heldNow asks the heartbeats again whether an agent holds dir.
func (p *pass) heldNow(dir string) bool {
	if p.a.o.Heartbeats == nil {
		return false
	}
	for _, h := range p.a.o.Heartbeats.Heartbeats() {
		switch {
		case h.Worktree != "" && filepath.Clean(h.Worktree) == filepath.Clean(dir):
			return true
		case h.Worktree == "" && (h.Project == "" || h.Project == p.a.o.Project.Name):
			return true // work that does not say where it runs may run anywhere
		}
	}
	return false
}

// remedyContainer starts a stopped container the project lists in
// [services], once per cooldown; when it is down again within the
// cooldown it is escalated. The stack's own containers are compose's to
// restart: they are reported and escalated when they stay down.
func remedyContainer(ctx context.Context, p *pass, f *Finding, rs *ruleState) verdict {
	if f.subject == "stack" || p.a.o.Engine == nil {
		return done
	}
	if rs.coolingDown(p.now) {
		if rs.Remedied > 0 {
			return unfixable
		}
		return done
	}
	for _, c := range p.snap.Containers {
		if c.Name != f.Key {
			continue
		}
		err := p.a.o.Engine.Start(ctx, c.ID)
		p.act(f, "started container "+c.Name, 0, err)
		if err != nil {
			return unfixable
		}
	}
	return done
}

// remedyDeadLock deletes a lock file whose owner is dead, probing its
// owner again just before.
func remedyDeadLock(_ context.Context, p *pass, f *Finding, _ *ruleState) verdict {
	l, ok := readLock(f.Key)
	if !ok || l.Alive || p.removals >= maxRemovalsPerRun {
		return done
	}
	p.removals++
	err := os.Remove(f.Key)
	p.act(f, fmt.Sprintf("removed lock %s of dead pid %d", f.Key, l.PID), 0, err)
	if err != nil {
		return done
	}
	return fixed
}

// remedyGitState aborts a broken rebase and checks out the primary
// branch, only while no agent holds the checkout. A checkout with
// uncommitted changes is escalated: nothing is stashed or discarded.
func remedyGitState(ctx context.Context, p *pass, f *Finding, rs *ruleState) verdict {
	var c *CheckoutState
	for i := range p.snap.Checkouts {
		if p.snap.Checkouts[i].Dir == f.Key {
			c = &p.snap.Checkouts[i]
		}
	}
	if c == nil || p.a.o.Heartbeats == nil || p.heldNow(c.Dir) {
		// Without heartbeats nobody can tell whether an agent uses it.
		return done
	}
	if rs.coolingDown(p.now) && rs.Remedied > 0 {
		return unfixable
	}
	r := git.New(git.Options{}).Open(c.Dir)
	if r.Rebasing(ctx, c.Dir) {
		err := r.AbortRebase(ctx, c.Dir)
		p.act(f, "aborted the rebase in "+c.Dir, 0, err)
		if err != nil {
			f.evidence = err.Error()
			return unfixable
		}
	}
	if dirty, err := r.HasUncommittedChanges(ctx, c.Dir); err != nil || dirty {
		f.evidence = "the checkout has uncommitted changes; nothing was stashed or discarded"
		if err != nil {
			f.evidence = err.Error()
		}
		return unfixable
	}
	if b, _ := r.CurrentBranch(ctx, c.Dir); b != c.Primary {
		err := r.CheckoutBranch(ctx, c.Dir, c.Primary)
		p.act(f, "checked out "+c.Primary+" in "+c.Dir, 0, err)
		if err != nil {
			f.evidence = err.Error()
			return unfixable
		}
	}
	if b, _ := r.CurrentBranch(ctx, c.Dir); b != c.Primary || r.Rebasing(ctx, c.Dir) {
		return unfixable
	}
	if dirty, _ := r.HasUncommittedChanges(ctx, c.Dir); dirty {
		return unfixable
	}
	return fixed
}

// remedyRenotify mentions the maintainers on an incident that has been
// open for a day without news, once per day.
func remedyRenotify(ctx context.Context, p *pass, f *Finding, rs *ruleState) verdict {
	if rs.coolingDown(p.now) || p.a.o.Forge == nil {
		return done
	}
	is, ok := p.snap.Incidents[f.Key]
	if !ok {
		return done
	}
	body := "Still open after " + p.now.Sub(is.Created).Round(time.Hour).String() + "." + mentions(p.a.o.Maintainers)
	_, err := p.a.o.Forge.CreateComment(ctx, is.Number, body)
	p.act(f, fmt.Sprintf("reminded the maintainers on incident #%d", is.Number), 0, err)
	return done
}

// remedyStalePR asks the dev agent to walk a pull request that has been
// stale for StalePRRuns runs in a row, once; if it is still stale as long
// again afterwards it is escalated.
func remedyStalePR(ctx context.Context, p *pass, f *Finding, rs *ruleState) verdict {
	if rs.Consecutive < p.cfg.StalePRRuns {
		return done
	}
	if rs.Remedied > 0 {
		if rs.Consecutive >= 2*p.cfg.StalePRRuns {
			return unfixable
		}
		return done
	}
	if p.a.o.Walker == nil {
		p.act(f, "cannot restart the dev agent's walk: no dev agent hook", 0, nil)
		return unfixable
	}
	var n int64
	_, _ = fmt.Sscanf(f.Key, "pr-%d", &n)
	err := p.a.o.Walker.RestartPRWalk(ctx, n)
	p.act(f, fmt.Sprintf("restarted the dev agent's walk of pull request #%d", n), 0, err)
	return done
}

// joinRoles lists roles.
func joinRoles(rs []config.Role) string {
	var s []string
	for _, r := range rs {
		s = append(s, string(r))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// mentions renders " @a @b" for the maintainers.
func mentions(logins []string) string {
	var b strings.Builder
	for _, l := range logins {
		b.WriteString(" @" + l)
	}
	return b.String()
}

// bytesText renders a byte count for humans.
func bytesText(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
)

// collectTimeout bounds each source's part of a snapshot.
const collectTimeout = 30 * time.Second

// failureWindow is how far back the ledger is read for repeated failures.
const failureWindow = 2 * time.Hour

// collect takes the run's snapshot. A source that cannot be read is
// recorded as unobserved; it never fails the run.
func (a *Agent) collect(ctx context.Context, st *state, now time.Time) *Snapshot {
	s := &Snapshot{Taken: now, Project: a.o.Project.Name}
	for _, c := range []collector{a.collectHost, a.collectDocker, a.collectLocal, a.collectForge, a.collectLedger} {
		cctx, cancel := context.WithTimeout(ctx, collectTimeout)
		c(cctx, s)
		cancel()
	}
	return s
}

func (a *Agent) collectHost(_ context.Context, s *Snapshot) {
	m, err := a.o.Host.Memory()
	if err != nil {
		s.unobserved(SourceHost, err)
		return
	}
	s.Memory = m
	if a.o.DataDir != "" {
		if d, err := a.o.Host.Disk(a.o.DataDir); err == nil {
			d.What = "data dir"
			s.Disks = append(s.Disks, d)
		}
	}
}

// collectDocker reads the containers, the data root and the volumes.
func (a *Agent) collectDocker(ctx context.Context, s *Snapshot) {
	if a.o.Engine == nil {
		s.unobserved(SourceDocker, errors.New("DOCKER_HOST is not set (the Docker socket is opt-in: docker/docker-socket.override.yml)"))
		return
	}
	listed := a.o.Project.Supervisor.Containers
	cs, err := a.o.Engine.Containers(ctx, a.o.Stack, listed)
	if err != nil {
		s.unobserved(SourceDocker, err)
		return
	}
	s.Containers = cs
	have := map[string]bool{}
	for _, c := range cs {
		have[c.Name] = true
	}
	for _, n := range listed {
		if !have[n] {
			s.Missing = append(s.Missing, n)
		}
	}
	if root, err := a.o.Engine.DataRoot(ctx); err == nil && root != "" {
		a.addDisk(s, "docker data root", root)
	}
	if a.o.Stack != "" {
		vols, err := a.o.Engine.Volumes(ctx, a.o.Stack)
		if err == nil {
			for _, v := range vols {
				a.addDisk(s, "volume "+v.Name, v.Mountpoint)
			}
		}
	}
}

// addDisk measures path, once per file system path.
func (a *Agent) addDisk(s *Snapshot, what, path string) {
	for _, d := range s.Disks {
		if d.Path == path {
			return
		}
	}
	d, err := a.o.Host.Disk(path)
	if err != nil {
		return
	}
	d.What, d.Path = what, path
	s.Disks = append(s.Disks, d)
}

// collectLocal reads heartbeats, locks, checkouts and worktrees.
func (a *Agent) collectLocal(ctx context.Context, s *Snapshot) {
	if a.o.Heartbeats != nil {
		s.Agents = a.o.Heartbeats.Heartbeats()
	}
	held := map[string]bool{}
	anywhere := false
	for _, h := range s.Agents {
		if h.Worktree != "" {
			held[filepath.Clean(h.Worktree)] = true
		} else if h.Project == "" || h.Project == a.o.Project.Name {
			// Work that does not say where it runs may run anywhere.
			anywhere = true
		}
	}
	isHeld := func(dir string) bool { return anywhere || held[filepath.Clean(dir)] }
	s.Locks = findLocks(a.o.DataDir)
	g := git.New(git.Options{})
	for _, c := range a.o.Checkouts {
		cs := CheckoutState{Dir: c.Dir, Primary: c.Primary, Held: isHeld(c.Dir)}
		if _, err := os.Stat(filepath.Join(c.Dir, ".git")); err != nil {
			continue // not cloned yet
		}
		r := g.Open(c.Dir)
		b, err := r.CurrentBranch(ctx, c.Dir)
		if err != nil && !errors.Is(err, git.ErrDetached) {
			cs.Err = err.Error()
		}
		cs.Branch = b
		cs.Rebasing = r.Rebasing(ctx, c.Dir)
		s.Checkouts = append(s.Checkouts, cs)
		wts, err := r.Worktrees(ctx)
		if err != nil {
			continue
		}
		for i, wt := range wts {
			if i == 0 || wt.Prunable {
				continue // the clone's own checkout
			}
			fi, err := os.Stat(wt.Dir)
			if err != nil {
				continue
			}
			s.Worktrees = append(s.Worktrees, WorktreeState{Dir: wt.Dir, Clone: c.Dir, Head: wt.Head, Branch: wt.Branch, Mod: fi.ModTime(),
				Held: isHeld(wt.Dir), Preserved: r.Preserved(ctx, wt.Dir)})
		}
	}
}

// findLocks lists the lock files of the factory (*.lock directly in the
// data dir and in its locks/ dir) that name a pid.
func findLocks(dataDir string) []Lock {
	if dataDir == "" {
		return nil
	}
	var out []Lock
	for _, d := range datadir.New(dataDir).LockDirs() {
		matches, _ := filepath.Glob(filepath.Join(d, "*.lock"))
		sort.Strings(matches)
		for _, m := range matches {
			if l, ok := readLock(m); ok {
				out = append(out, l)
			}
		}
	}
	return out
}

// readLock reads the pid a lock file names (a number on its first line,
// or a JSON "pid" field) and probes its owner.
func readLock(path string) (Lock, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return Lock{}, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Lock{}, false
	}
	pid := parsePID(string(data))
	if pid <= 0 {
		return Lock{}, false
	}
	return Lock{Path: path, PID: pid, Alive: lockAlive(path, pid), Mod: fi.ModTime()}, true
}

// parsePID reads "1234\n" or {"pid": 1234, ...}.
func parsePID(s string) int {
	s = strings.TrimSpace(s)
	line, _, _ := strings.Cut(s, "\n")
	if n, err := strconv.Atoi(strings.TrimSpace(line)); err == nil {
		return n
	}
	if i := strings.Index(s, `"pid"`); i >= 0 {
		rest := strings.TrimLeft(s[i+5:], " \t:")
		end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if end < 0 {
			end = len(rest)
		}
		if n, err := strconv.Atoi(rest[:end]); err == nil {
			return n
		}
	}
	return 0
}

// lockAlive reports whether the lock's owner lives: its pid exists, or
// someone holds an flock on the file.
func lockAlive(path string, pid int) bool {
	if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true // held by a live process whose pid we cannot see
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// collectForge reads the open pull requests with their CI and the open
// incidents: the supervisor bot's issues carrying the incident marker.
// Anyone else's issue with the marker is no incident, so it is never
// edited, renotified or closed as one.
func (a *Agent) collectForge(ctx context.Context, s *Snapshot) {
	if a.o.Forge == nil {
		s.unobserved(SourceForge, errors.New("no forge client"))
		return
	}
	me, err := a.self.Login(ctx, a.o.Forge.Me)
	if err != nil {
		s.unobserved(SourceForge, err)
		return
	}
	issues, err := a.o.Forge.ListIssues(ctx, forge.IssueQuery{State: forge.StateOpen})
	if err != nil {
		s.unobserved(SourceForge, err)
		return
	}
	s.Bot = me
	s.Incidents = map[string]forge.Issue{}
	for _, is := range issues {
		if m, ok := is.MarkerBy(forge.MarkerIncident, me); ok && m.Fields["fingerprint"] != "" {
			s.Incidents[m.Fields["fingerprint"]] = is
		}
	}
	pulls, err := a.o.Forge.ListPulls(ctx, forge.StateOpen)
	if err != nil {
		s.unobserved(SourceForge, err)
		return
	}
	held := map[int64]bool{}
	for _, h := range s.Agents {
		if h.PR != 0 {
			held[h.PR] = true
		}
	}
	for _, pr := range pulls {
		ps := PRState{Number: pr.Number, Head: pr.HeadSHA, Branch: pr.Head, Updated: pr.Updated, Held: held[pr.Number]}
		if cs, err := a.o.Forge.CombinedStatus(ctx, pr.HeadSHA); err == nil {
			ps.CI = cs.State
		}
		s.PRs = append(s.PRs, ps)
	}
}

// collectLedger finds run failures that repeat with one signature.
func (a *Agent) collectLedger(_ context.Context, s *Snapshot) {
	if a.o.LedgerDir == "" {
		return
	}
	recs, _, err := ledger.Read(a.o.LedgerDir, ledger.Filter{Project: a.o.Project.Name, Since: s.Taken.Add(-failureWindow)})
	if err != nil {
		s.unobserved(SourceLedger, err)
		return
	}
	bursts := map[string]*FailureBurst{}
	for _, r := range recs {
		if r.Reason != ledger.ReasonEngineError || r.Role == "supervisor" {
			continue
		}
		k := r.Role + "/" + string(r.Code)
		b := bursts[k]
		if b == nil {
			b = &FailureBurst{Role: r.Role, Code: string(r.Code)}
			bursts[k] = b
		}
		b.Count++
		b.Last, b.Detail = r.End, r.Detail
	}
	for _, b := range bursts {
		if b.Count >= failureBurstMinimum {
			s.Failures = append(s.Failures, *b)
		}
	}
	sort.Slice(s.Failures, func(i, j int) bool {
		return fmt.Sprint(s.Failures[i].Role, s.Failures[i].Code) < fmt.Sprint(s.Failures[j].Role, s.Failures[j].Code)
	})
}

package datadir

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Owners says who held the ops checkouts an older layout named by their
// user rather than by identity, for one project.
type Owners struct {
	Project string
	// OpsRepo is the project's ops repository (owner/name): an older
	// checkout under clones/ is recognised by its remote, never by its
	// name alone, since a bot's login may end in "-ops" too.
	OpsRepo string
	// DevBot held the daemon's checkout (ops/<project>); VaultBot the
	// vault's (vault/<project>/ops and cli-ops). Empty: unknown, and an
	// older checkout of it is discarded.
	DevBot, VaultBot string
}

// Move is one change Migrate made: From went to To, or was discarded
// (To empty).
type Move struct{ From, To string }

// Migrate brings a data dir written by an older layout to this one. The
// older layout kept up to six checkouts of a project's ops repository:
// the daemon's (ops/<project>), the vault's and the command line's
// (vault/<project>/ops, cli-ops), the predictor's and each dev agent's
// (vault/<project>/predictor-ops, dev-ops, dev-ops-<lane>) and the
// planner's and architect's (clones/<project>/<bot>-ops). This layout
// keeps one per project and identity (Ops), and one for the command line
// (CLIOps). A checkout whose owner is known is moved there; the others
// are discarded. An ops checkout holds nothing that is not on the forge:
// commits are made without a working tree and pushed at once. Nothing
// else moves, so the journals' queues and the ledger stay where they
// are. Migrate is idempotent, and a run cut short is finished by the
// next; call it with the data dir's lock held.
func (l Layout) Migrate(owners []Owners) ([]Move, error) {
	m := migration{l: l, owners: map[string]Owners{}}
	for _, o := range owners {
		m.owners[o.Project] = o
	}
	for _, step := range []func() error{m.daemonOps, m.vaultOps, m.cloneOps} {
		if err := step(); err != nil {
			return m.moves, err
		}
	}
	return m.moves, nil
}

type migration struct {
	l      Layout
	owners map[string]Owners
	moves  []Move
}

// subdirs lists the directories in dir; none when dir does not exist.
func subdirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("migrate data dir: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// move moves from to to (to's parent made as needed), or discards from
// when to is empty or already there.
func (m *migration) move(from, to string) error {
	if to == "" || exists(to) {
		if err := os.RemoveAll(from); err != nil {
			return fmt.Errorf("migrate data dir: %w", err)
		}
		m.moves = append(m.moves, Move{From: from})
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o750); err != nil {
		return fmt.Errorf("migrate data dir: %w", err)
	}
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("migrate data dir: %w", err)
	}
	m.moves = append(m.moves, Move{From: from, To: to})
	return nil
}

// daemonOps moves ops/<project>, once a checkout itself, to
// ops/<project>/<dev bot>. It goes through ops/.<project>.old, since the
// new place is inside the old; a run cut short between the two renames
// is finished here.
func (m *migration) daemonOps() error {
	dir := m.l.at("ops")
	names, err := subdirs(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if strings.HasPrefix(n, ".") || !exists(filepath.Join(dir, n, ".git")) {
			continue
		}
		if err := os.Rename(filepath.Join(dir, n), filepath.Join(dir, "."+n+".old")); err != nil {
			return fmt.Errorf("migrate data dir: %w", err)
		}
	}
	if names, err = subdirs(dir); err != nil {
		return err
	}
	for _, n := range names {
		project, ok := strings.CutSuffix(strings.TrimPrefix(n, "."), ".old")
		if !ok || !strings.HasPrefix(n, ".") {
			continue
		}
		to := ""
		if bot := m.owners[project].DevBot; bot != "" {
			to = m.l.Ops(project, bot)
		}
		if err := m.move(filepath.Join(dir, n), to); err != nil {
			return err
		}
	}
	return nil
}

// vaultOps moves the vault's and the command line's checkouts to the
// vault bot's, and discards the predictor's and the dev agents'.
func (m *migration) vaultOps() error {
	dir := m.l.at("vault")
	projects, err := subdirs(dir)
	if err != nil {
		return err
	}
	for _, p := range projects {
		names, err := subdirs(filepath.Join(dir, p))
		if err != nil {
			return err
		}
		bot := m.owners[p].VaultBot
		for _, n := range names {
			to := ""
			switch {
			case n == "ops" && bot != "":
				to = m.l.Ops(p, bot)
			case n == "cli-ops" && bot != "":
				to = m.l.CLIOps(p, bot)
			case n == "ops", n == "cli-ops", n == "predictor-ops", n == "dev-ops", strings.HasPrefix(n, "dev-ops-"):
			default:
				continue // not an ops checkout (the mirror clone)
			}
			if err := m.move(filepath.Join(dir, p, n), to); err != nil {
				return err
			}
		}
	}
	return nil
}

// cloneOps moves clones/<project>/<bot>-ops, the planner's and the
// architect's, to ops/<project>/<bot>, when its remote is the project's
// ops repository.
func (m *migration) cloneOps() error {
	for p, o := range m.owners {
		if o.OpsRepo == "" {
			continue
		}
		dir := m.l.at("clones", p)
		names, err := subdirs(dir)
		if err != nil {
			return err
		}
		for _, n := range names {
			bot, ok := strings.CutSuffix(n, "-ops")
			if !ok || bot == "" || !remoteIs(filepath.Join(dir, n), o.OpsRepo) {
				continue
			}
			if err := m.move(filepath.Join(dir, n), m.l.Ops(p, bot)); err != nil {
				return err
			}
		}
	}
	return nil
}

// remoteIs reports whether the checkout at dir has a remote whose URL
// names repo (owner/name).
func remoteIs(dir, repo string) bool {
	f, err := os.Open(filepath.Join(dir, ".git", "config"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.TrimSpace(k) != "url" {
			continue
		}
		u := strings.TrimSuffix(strings.TrimSpace(v), "/")
		if strings.HasSuffix(u, "/"+repo+".git") || strings.HasSuffix(u, "/"+repo) {
			return true
		}
	}
	return false
}

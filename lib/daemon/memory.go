package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ops"
)

// envSyncInterval sets how often the daemon fetches the ops and .profile
// checkouts, which is how soon an override or new lessons take effect.
const envSyncInterval = "DISINTO_SYNC_INTERVAL"

// defaultSyncInterval is the period of those fetches.
const defaultSyncInterval = 2 * time.Minute

// memoryWiring connects the agents to what the daemon keeps of the ops
// and .profile repositories: the formulas in force, which follow their
// overrides, and the bots' lessons. The checkouts are made after the
// agents are built, so everything here is looked up when used.
type memoryWiring struct {
	mu       sync.Mutex
	journals *journals
	ops      *opsCheckouts
	lives    []liveEntry
}

// liveEntry is one live formula and whom it serves.
type liveEntry struct {
	project, role string
	live          *formula.Live
}

// syncInterval is the period of the checkouts' fetches.
func (s *Services) syncInterval() time.Duration {
	if d, err := time.ParseDuration(s.Config.Env.Get(envSyncInterval)); err == nil && d > 0 {
		return d
	}
	return defaultSyncInterval
}

// LiveFormula returns the formula name of role on p as a live formula:
// the role's bot's .profile override, then the ops repository's, then the
// embedded one, resolved again whenever the daemon's checkouts moved.
// check is what the agent requires beyond lint; nil when nothing.
func (s *Services) LiveFormula(ctx context.Context, p *config.Project, role config.Role, name string, check func(*formula.Formula) error, log zerolog.Logger) (*formula.Live, error) {
	l, err := formula.NewLive(ctx, formula.LiveOptions{Name: name, Embedded: s.Embedded, Check: check, Logger: log,
		Profile: s.profileTree(p, role), Ops: s.opsTree(p)})
	if err != nil {
		return nil, err
	}
	s.mem.mu.Lock()
	s.mem.lives = append(s.mem.lives, liveEntry{project: p.Name, role: string(role), live: l})
	s.mem.mu.Unlock()
	return l, nil
}

// profileTree reads the .profile checkout of role's bot on p.
func (s *Services) profileTree(p *config.Project, role config.Role) formula.TreeAt {
	return func(ctx context.Context) (*formula.Tree, string, error) {
		s.mem.mu.Lock()
		js := s.mem.journals
		s.mem.mu.Unlock()
		if js == nil {
			return nil, "", nil
		}
		j := js.journalFor(p.Name, string(role))
		if j == nil || !j.HasProfile() {
			return nil, "", nil
		}
		return checkoutTree(ctx, j.Profile(), j.Bot()+"/.profile")
	}
}

// opsTree reads p's ops checkout: the daemon's own, else the configured
// ops_repo_root directory (read as it is, never moving).
func (s *Services) opsTree(p *config.Project) formula.TreeAt {
	return func(ctx context.Context) (*formula.Tree, string, error) {
		if r := s.OpsRepo(p.Name); r != nil {
			return checkoutTree(ctx, r, p.OpsRepo)
		}
		if p.OpsRepoRoot != "" {
			return formula.DirTree(p.OpsRepoRoot), "dir", nil
		}
		return nil, "", nil
	}
}

// checkoutTree is a managed checkout as last fetched.
func checkoutTree(ctx context.Context, r *ops.Repo, label string) (*formula.Tree, string, error) {
	files, head, err := r.Local(ctx)
	if err != nil || head == "" {
		return nil, "", err
	}
	return &formula.Tree{Label: label, Read: files.Read}, head, nil
}

// LessonsFor returns the lessons of role's bot on p, for its prompts.
func (s *Services) LessonsFor(p *config.Project, role config.Role) func(context.Context) string {
	return func(ctx context.Context) string {
		s.mem.mu.Lock()
		js := s.mem.journals
		s.mem.mu.Unlock()
		if js == nil {
			return ""
		}
		if j := js.journalFor(p.Name, string(role)); j != nil {
			return j.Lessons(ctx)
		}
		return ""
	}
}

// FormulaStatus lists the live formulas, by project and role.
type FormulaStatus struct {
	Project string `json:"project"`
	Role    string `json:"role"`
	formula.LiveStatus
}

// formulas returns the state of every live formula.
func (m *memoryWiring) formulas() []FormulaStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]FormulaStatus, 0, len(m.lives))
	for _, e := range m.lives {
		out = append(out, FormulaStatus{Project: e.project, Role: e.role, LiveStatus: e.live.Status()})
	}
	return out
}

// syncOnce fetches every .profile and ops checkout and re-resolves the
// live formulas whose checkouts moved.
func (s *Services) syncOnce(ctx context.Context, projects []*config.Project, log zerolog.Logger) {
	s.mem.mu.Lock()
	js, oc, lives := s.mem.journals, s.mem.ops, append([]liveEntry(nil), s.mem.lives...)
	s.mem.mu.Unlock()
	if js != nil {
		for _, j := range js.all() {
			if !j.HasProfile() {
				continue
			}
			if _, err := j.Profile().Sync(ctx); err != nil {
				log.Debug().Str("bot", j.Bot()).Str("error", s.Redactor.Error(err)).Msg(".profile checkout not synced")
			}
			j.Lessons(ctx) // status shows their size, whether or not a prompt read them
		}
	}
	if oc != nil {
		for _, p := range projects {
			if err := oc.fetch(ctx, p, s.Redactor.Error); err != nil {
				log.Debug().Str("project", p.Name).Str("error", s.Redactor.Error(err)).Msg("ops checkout not synced")
			}
		}
	}
	for _, e := range lives {
		e.live.Refresh(ctx)
	}
}

// syncLoop runs syncOnce every interval until ctx ends.
func (s *Services) syncLoop(ctx context.Context, projects []*config.Project, log zerolog.Logger) {
	t := time.NewTicker(s.syncInterval())
	defer t.Stop()
	for {
		s.syncOnce(ctx, projects, log)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

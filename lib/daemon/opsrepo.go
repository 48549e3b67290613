package daemon

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// opsSyncTimeout bounds the start-up sync of one ops checkout.
const opsSyncTimeout = 2 * time.Minute

// opsCheckouts are the daemon's managed checkouts of the projects' ops
// repositories, one per project, as the dev bot.
type opsCheckouts struct {
	mu    sync.Mutex
	repos map[string]*ops.Repo
	state map[string]OpsInfo
}

// OpsInfo is what status shows of one ops checkout.
type OpsInfo struct {
	Project string    `json:"project"`
	Repo    string    `json:"repo"`
	Head    string    `json:"head,omitempty"`
	Synced  time.Time `json:"synced,omitzero"`
	Error   string    `json:"error,omitempty"`
}

// open makes the checkout of p's ops repository under the data dir, or
// nil when no bot can act on it.
func (oc *opsCheckouts) open(s *Services, p *config.Project) *ops.Repo {
	bot, err := s.Config.Bot(config.RoleDev)
	if err != nil || p.OpsRepo == "" {
		return nil
	}
	g := git.New(git.Options{Credentials: &git.Credentials{URL: p.ForgeURL, Username: bot.User, Password: bot.Password},
		Redactor: s.Redactor})
	name, email := git.Identity(bot.User)
	r := s.Checkouts.Open(ops.Options{Git: g, URL: p.ForgeURL + "/" + p.OpsRepo + ".git",
		Dir: s.Layout.Ops(p.Name, bot.User), Name: name, Email: email})
	oc.mu.Lock()
	defer oc.mu.Unlock()
	if oc.repos == nil {
		oc.repos, oc.state = map[string]*ops.Repo{}, map[string]OpsInfo{}
	}
	oc.repos[p.Name] = r
	oc.state[p.Name] = OpsInfo{Project: p.Name, Repo: p.OpsRepo}
	s.mem.mu.Lock()
	s.mem.ops = oc
	s.mem.mu.Unlock()
	return r
}

// repo returns the checkout of project, nil when it has none.
func (oc *opsCheckouts) repo(project string) *ops.Repo {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return oc.repos[project]
}

// fetch fetches p's checkout (nothing else: the layout was made at start)
// and records the outcome for status.
func (oc *opsCheckouts) fetch(ctx context.Context, p *config.Project, red func(error) string) error {
	r := oc.repo(p.Name)
	if r == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, opsSyncTimeout)
	defer cancel()
	head, err := r.Sync(ctx)
	oc.record(p.Name, head, err, red)
	return err
}

// record notes the outcome of a sync of project's checkout.
func (oc *opsCheckouts) record(project, head string, err error, red func(error) string) {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	info := oc.state[project]
	if err != nil {
		info.Error = red(err)
	} else {
		info.Head, info.Synced, info.Error = head, time.Now(), ""
	}
	oc.state[project] = info
}

// sync fetches p's checkout and creates the ops layout it lacks,
// recording the outcome for status. A layout that cannot be committed
// because the primary branch is protected leaves the checkout synced and
// returns ops.ErrProtected for the caller to say.
func (oc *opsCheckouts) sync(ctx context.Context, p *config.Project, red func(error) string) error {
	oc.mu.Lock()
	r := oc.repos[p.Name]
	oc.mu.Unlock()
	if r == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, opsSyncTimeout)
	defer cancel()
	_, layoutErr := r.EnsureLayout(ctx)
	head, err := r.Sync(ctx)
	if err == nil && layoutErr != nil && !errors.Is(layoutErr, ops.ErrProtected) {
		err = layoutErr
	}
	oc.record(p.Name, head, err, red)
	if err != nil {
		return err
	}
	return layoutErr
}

// list returns the checkouts' state, by project.
func (oc *opsCheckouts) list(projects []*config.Project) []OpsInfo {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	var out []OpsInfo
	for _, p := range projects {
		if info, ok := oc.state[p.Name]; ok {
			out = append(out, info)
		}
	}
	return out
}

// OpsRepo returns the daemon's checkout of project's ops repository, nil
// when there is none (yet).
func (s *Services) OpsRepo(project string) *ops.Repo {
	s.mem.mu.Lock()
	oc := s.mem.ops
	s.mem.mu.Unlock()
	if oc == nil {
		return nil
	}
	return oc.repo(project)
}

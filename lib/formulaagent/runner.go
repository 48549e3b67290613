package formulaagent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/sandbox"
)

// Defaults of a role's session.
const (
	DefaultTurns   = 40
	DefaultTimeout = 30 * time.Minute
	// MaxFile bounds one file read back from the session's copy.
	MaxFile = 256 << 10
)

// ErrSession wraps why a role's session produced nothing usable.
var ErrSession = errors.New("session failed")

// Options configures a Driver: the parts every run of one role on one
// project shares.
type Options struct {
	// Role names the role ("gardener"); it prefixes branches
	// (chore/<role>-...), workspace keys and transcripts.
	Role    string
	Project string
	// Git carries the role bot's credentials; URL is the project's clone
	// URL without them; CloneDir is the role's own clone. A role that
	// never checks out (the architect) leaves them empty.
	Git      *git.Git
	URL      string
	CloneDir string
	Primary  string
	// Bot is the role bot's login (the commit identity).
	Bot string
	// Forge is the project repository, acting as the role bot: the watch
	// reads it, the identity and the pull requests are its.
	Forge Forge
	// StateDir holds the role's lock, its watermark and whatever state
	// of its own the role keeps (StatePath).
	StateDir string
	// Formula is the role's formula; Live, when set, is the formula in
	// force, resolved again at each run (.profile and ops repository
	// overrides), Formula its fallback.
	Formula *formula.Formula
	Live    LiveFormula
	// Lessons returns the bot's lessons for the prompt (nil: none).
	Lessons func(context.Context) string
	// Claude runs the session in a workspace of Sandbox.
	Claude  claude.Runner
	Sandbox *sandbox.Sandbox
	// Model, Backend, MaxTurns and Timeout bound the session; defaults
	// when empty (the formula's model, DefaultTurns, DefaultTimeout).
	Model, Backend string
	MaxTurns       int
	Timeout        time.Duration
	Redactor       *redact.Redactor
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	Log zerolog.Logger
}

// Forge is what the runtime does on the project repository as the role
// bot.
type Forge interface {
	WatchForge
	PublishForge
	Me(ctx context.Context) (forge.User, error)
}

// PublishForge is what a Driver does on the forge.
type PublishForge interface {
	CreatePull(ctx context.Context, in forge.NewPull) (forge.PullRequest, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
}

// LiveFormula is a formula that follows its overrides (*formula.Live).
type LiveFormula interface {
	// Refresh resolves it again when an overriding checkout moved.
	Refresh(ctx context.Context)
	// Formula returns the formula in force (nil: none).
	Formula() *formula.Formula
}

// Formulas is a role's formula: Live, resolved at each use, else the
// fallback Formula.
type Formulas struct {
	Formula *formula.Formula
	Live    LiveFormula
}

// Resolve returns the formula in force now, the overrides read afresh.
func (f Formulas) Resolve(ctx context.Context) *formula.Formula {
	if f.Live != nil {
		f.Live.Refresh(ctx)
		if cur := f.Live.Formula(); cur != nil {
			return cur
		}
	}
	return f.Formula
}

// Driver drives one role on one project: it runs the tick
// (Tick), checks out the run's copy, runs the sessions and publishes. It
// is safe for concurrent use, though the role's lock keeps runs apart.
type Driver struct {
	o     Options
	watch Watch
	self  forge.Self

	mu   sync.Mutex
	repo *git.Repo
}

// NewRunner returns the runner of o.
func NewRunner(o Options) *Driver {
	if o.Primary == "" {
		o.Primary = "main"
	}
	b := claude.Bounds{MaxTurns: o.MaxTurns, Timeout: o.Timeout}.Or(claude.Bounds{MaxTurns: DefaultTurns, Timeout: DefaultTimeout})
	o.MaxTurns, o.Timeout = b.MaxTurns, b.Timeout
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Driver{o: o, watch: Watch{Forge: o.Forge, Primary: o.Primary, File: filepath.Join(o.StateDir, "watch.json")}}
}

// Now is the runtime's clock.
func (r *Driver) Now() time.Time { return r.o.Now() }

// Watch is the role's change watch (its watermark in the state dir).
func (r *Driver) Watch() Watch { return r.watch }

// StatePath is the path of the role's state file name.
func (r *Driver) StatePath(name string) string { return filepath.Join(r.o.StateDir, name) }

// Formula is the role's formula in force now.
func (r *Driver) Formula(ctx context.Context) *formula.Formula {
	return Formulas{Formula: r.o.Formula, Live: r.o.Live}.Resolve(ctx)
}

// Lessons are the bot's lessons now ("" without).
func (r *Driver) Lessons(ctx context.Context) string {
	if r.o.Lessons == nil {
		return ""
	}
	return r.o.Lessons(ctx)
}

// Identity returns the role bot's login, asked of the forge once.
func (r *Driver) Identity(ctx context.Context) (string, error) {
	return r.self.Login(ctx, r.o.Forge.Me)
}

// Bounds are the session bounds of the runner with f's model when no
// model is set.
func (r *Driver) bounds(f *formula.Formula) claude.Bounds {
	b := claude.Bounds{Model: r.o.Model, Backend: r.o.Backend, MaxTurns: r.o.MaxTurns, Timeout: r.o.Timeout}
	if b.Model == "" && f != nil {
		b.Model = f.Model
	}
	return b
}

// label names a session of the role in logs and transcripts; parts are
// appended with dashes.
func (r *Driver) label(parts ...string) string {
	return strings.Join(append([]string{r.o.Role, r.o.Project}, parts...), "-")
}

// clone returns the role's clone, fetched.
func (r *Driver) clone(ctx context.Context) (*git.Repo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.repo == nil {
		if r.o.Git == nil {
			return nil, fmt.Errorf("%s: no clone configured", r.o.Role)
		}
		repo, err := r.o.Git.EnsureClone(ctx, r.o.URL, r.o.CloneDir, r.o.Primary)
		if err != nil {
			return nil, fmt.Errorf("%s clone: %w", r.o.Role, err)
		}
		name, email := git.Identity(r.o.Bot)
		if err := repo.ConfigureIdentity(ctx, name, email); err != nil {
			return nil, err
		}
		r.repo = repo
	}
	if err := r.repo.Fetch(ctx); err != nil {
		return nil, fmt.Errorf("%s fetch: %w", r.o.Role, err)
	}
	return r.repo, nil
}

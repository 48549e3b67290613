package formulaagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/atomicfile"
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

// Options configures a Runner: the parts every run of one role on one
// project shares.
type Options struct {
	// Role names the role ("gardener"); it prefixes branches
	// (chore/<role>-...), workspace keys and transcripts.
	Role    string
	Project string
	// Git carries the role bot's credentials; URL is the project's clone
	// URL without them; CloneDir is the role's own clone.
	Git      *git.Git
	URL      string
	CloneDir string
	Primary  string
	// Bot is the role bot's login (the commit identity).
	Bot string
	// Forge acts as the role bot.
	Forge PublishForge
	// Claude runs the session in a workspace of Sandbox.
	Claude  claude.Runner
	Sandbox *sandbox.Sandbox
	// Model, Backend, MaxTurns and Timeout bound the session; defaults
	// when empty.
	Model, Backend string
	MaxTurns       int
	Timeout        time.Duration
	Redactor       *redact.Redactor
	Log            zerolog.Logger
}

// PublishForge is what a Runner does on the forge.
type PublishForge interface {
	CreatePull(ctx context.Context, in forge.NewPull) (forge.PullRequest, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
}

// Runner runs the checkout, session and publication of one role on one
// project. It is safe for concurrent use, though the role's lock keeps
// runs apart.
type Runner struct {
	o    Options
	mu   sync.Mutex
	repo *git.Repo
}

// NewRunner returns the runner of o.
func NewRunner(o Options) *Runner {
	if o.Primary == "" {
		o.Primary = "main"
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = DefaultTurns
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &Runner{o: o}
}

// Work is one run's private copy of the primary branch, on the role's
// branch, in a session workspace.
type Work struct {
	r *Runner
	// Branch is the role's branch of this run; Base the primary commit it
	// starts from.
	Branch, Base string
	ws           *sandbox.Workspace
	repo         *git.Repo
}

// Branch is the role's branch for a run at t: chore/<role>-YYYYMMDD-HHMM
// (UTC).
func Branch(role string, t time.Time) string {
	return "chore/" + role + "-" + t.UTC().Format("20060102-1504")
}

// clone returns the role's clone, fetched.
func (r *Runner) clone(ctx context.Context) (*git.Repo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.repo == nil {
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

// Checkout makes a fresh copy of the primary branch on branch in the
// role's workspace of the project. The copy is the session's: the daemon
// never runs git in it again.
func (r *Runner) Checkout(ctx context.Context, branch string) (*Work, error) {
	repo, err := r.clone(ctx)
	if err != nil {
		return nil, err
	}
	base, err := repo.RefSHA(ctx, "refs/remotes/"+git.Remote+"/"+r.o.Primary)
	if err != nil {
		return nil, fmt.Errorf("%s checkout: %w", r.o.Role, err)
	}
	ws, err := r.o.Sandbox.Workspace(sandbox.Key(r.o.Role, r.o.Project))
	if err != nil {
		return nil, err
	}
	if err := ws.Reap(); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(ws.Repo()); err != nil {
		return nil, err
	}
	name, email := git.Identity(r.o.Bot)
	if err := repo.Seed(ctx, ws.Repo(), git.SeedOptions{Detach: base, RemoteURL: r.o.URL, Name: name, Email: email}); err != nil {
		return nil, fmt.Errorf("%s checkout: %w", r.o.Role, err)
	}
	if err := os.MkdirAll(filepath.Dir(ws.Out("x")), 0o700); err != nil {
		return nil, err
	}
	if err := ws.Own(ws.Repo()); err != nil {
		return nil, err
	}
	if err := ws.Own(filepath.Dir(ws.Out("x"))); err != nil {
		return nil, err
	}
	return &Work{r: r, Branch: branch, Base: base, ws: ws, repo: repo}, nil
}

// Dir is the session's copy of the repository.
func (w *Work) Dir() string { return w.ws.Repo() }

// Out is the path of the session's outbox file name.
func (w *Work) Out(name string) string { return w.ws.Out(name) }

// Primary is the primary branch at the run's base, read from the clone
// (never from the session's copy).
func (w *Work) Primary(ctx context.Context) fs.FS { return w.repo.RevFS(ctx, w.Base) }

// Repo is the role's clone (trusted).
func (w *Work) Repo() *git.Repo { return w.repo }

// Close removes the workspace.
func (w *Work) Close() error { return w.r.o.Sandbox.Remove(w.ws.Key()) }

// SessionInput is what a role hands to its session.
type SessionInput struct {
	Formula *formula.Formula
	Vars    map[string]string
	Blocks  []formula.Block
	Lessons string
	// OpsFS is the ops repository the formula's "ops:" context files are
	// read from (nil: none; they are skipped).
	OpsFS fs.FS
	// Env is given to the session (outbox paths); never a credential.
	Env map[string]string
}

// Session renders the formula and runs one bounded session in the copy.
func (w *Work) Session(ctx context.Context, in SessionInput) (claude.Result, error) {
	o := w.r.o
	if in.Formula == nil || o.Claude == nil {
		return claude.Result{}, fmt.Errorf("%w: no formula or runner", ErrSession)
	}
	var env []formula.EnvVar
	for k, v := range in.Env {
		env = append(env, formula.EnvVar{Name: k, Value: v})
	}
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	prompt, err := formula.Render(in.Formula, formula.RenderInput{
		Role: o.Role, Project: o.Project, Vars: in.Vars, RepoFS: w.Primary(ctx), OpsFS: in.OpsFS,
		Blocks: in.Blocks, Lessons: in.Lessons, Env: env, Logger: o.Log,
	})
	if err != nil {
		return claude.Result{}, fmt.Errorf("%w: %w", ErrSession, err)
	}
	model := o.Model
	if model == "" {
		model = in.Formula.Model
	}
	res, err := o.Claude.Run(ctx, claude.Invocation{
		Prompt: prompt, Dir: w.Dir(), Workspace: w.ws, Model: model, Backend: o.Backend,
		MaxTurns: o.MaxTurns, Timeout: o.Timeout, Env: in.Env, Label: o.Role + "-" + o.Project,
	})
	if err != nil {
		return res, fmt.Errorf("%w: %w", ErrSession, err)
	}
	return res, nil
}

// ReadOut reads an outbox file the session wrote, bounded; a missing
// file is an error wrapping fs.ErrNotExist.
func (w *Work) ReadOut(name string, max int64) ([]byte, error) {
	data, _, err := atomicfile.ReadUntrusted(w.Out(name), max)
	return data, err
}

// Collect reads back the files of the session's copy whose paths keep
// accepts, and returns those that differ from the base. Only regular
// files are read (a symlink is refused), each at most MaxFile bytes; a
// path the session deleted is not deleted.
func (w *Work) Collect(ctx context.Context, keep func(path string) bool) ([]git.FileChange, error) {
	root := w.Dir()
	var out []git.FileChange
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !keep(rel) {
			return nil
		}
		data, _, err := atomicfile.ReadUntrusted(p, MaxFile)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		old, oerr := w.repo.ShowFile(ctx, w.Base, rel)
		if oerr == nil && bytes.Equal(old, data) {
			return nil
		}
		out = append(out, git.FileChange{Path: rel, Content: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: read back the session's files: %w", w.r.o.Role, err)
	}
	return out, nil
}

// PR is what Publish opens.
type PR struct {
	Title, Body, Message string
}

// Publish commits changes on top of the base in the role's clone, pushes
// them to the run's branch as the role's bot, and opens the pull request.
// It returns the pull request and the pushed commit.
func (w *Work) Publish(ctx context.Context, changes []git.FileChange, pr PR) (forge.PullRequest, string, error) {
	o := w.r.o
	sha, err := w.repo.CommitFiles(ctx, w.Base, pr.Message, changes)
	if err != nil {
		return forge.PullRequest{}, "", err
	}
	if sha == w.Base {
		return forge.PullRequest{}, "", fmt.Errorf("%s: publish: nothing changed", o.Role)
	}
	if err := w.repo.Push(ctx, w.repo.Dir(), w.Branch, git.PushOptions{Source: sha}); err != nil {
		return forge.PullRequest{}, "", err
	}
	p, err := o.Forge.CreatePull(ctx, forge.NewPull{Title: pr.Title, Body: pr.Body, Head: w.Branch, Base: o.Primary})
	if err != nil {
		return forge.PullRequest{}, sha, fmt.Errorf("%s: open the pull request of %s: %w", o.Role, w.Branch, err)
	}
	return p, sha, nil
}

// Summary renders a run summary for a pull request comment: a heading,
// counts per kind (sorted) and free lines, every value neutralised.
func Summary(title string, counts map[string]int, lines []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", forge.Neutralise(title))
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		b.WriteString("| action | count |\n|---|---|\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "| %s | %d |\n", forge.Neutralise(k), counts[k])
		}
		b.WriteString("\n")
	}
	for _, l := range lines {
		fmt.Fprintf(&b, "- %s\n", forge.Neutralise(l))
	}
	return b.String()
}

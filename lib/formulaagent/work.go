package formulaagent

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/sandbox"
)

// Work is one run's private copy of the primary branch, on the role's
// branch, in a session workspace.
type Work struct {
	r *Driver
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

// Checkout makes a fresh copy of the primary branch on branch in the
// role's workspace of the project. The copy is the session's: the daemon
// never runs git in it again.
func (r *Driver) Checkout(ctx context.Context, branch string) (*Work, error) {
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

// SessionInput is what a role hands to its session; the runtime adds
// the formula in force and the bot's lessons.
type SessionInput struct {
	Vars   map[string]string
	Blocks []formula.Block
	// OpsFS is the ops repository the formula's "ops:" context files are
	// read from (nil: none; they are skipped).
	OpsFS fs.FS
	// Env is given to the session (outbox paths); never a credential.
	Env map[string]string
}

// Outbox is the file a session answers in: File in the workspace's
// outbox, its path given to the session as the variable Env and the
// formula's variable Var, read back at most Max bytes. What names the
// answer in errors ("a plan").
type Outbox struct {
	File, Env, Var string
	Max            int64
	What           string
}

// Answer is what a session left.
type Answer struct {
	Session claude.Result
	// Data is the outbox file; Missing why it could not be read (nil
	// when it was).
	Data    []byte
	Missing error
	r       *Driver
	what    string
}

// Failed is the error of a session that ended in an error without
// writing its outbox (nil otherwise): it judged nothing.
func (a Answer) Failed() error {
	if a.Missing == nil || !a.Session.IsError {
		return nil
	}
	return fmt.Errorf("%w: ended in error (%s) without %s: %s", ErrSession, a.Session.Subtype, a.what,
		a.r.o.Redactor.String(strings.Join(a.Session.Errors, "; ")))
}

// Session renders the formula in force and runs one bounded session in
// the copy.
func (w *Work) Session(ctx context.Context, in SessionInput) (claude.Result, error) {
	return w.r.session(ctx, w.Dir(), w.ws, in, w.Primary(ctx))
}

// Ask runs the session with out's path in its variables and environment
// and reads back out. The error is the session's failure only; an
// outbox it could not read is in Missing.
func (w *Work) Ask(ctx context.Context, in SessionInput, out Outbox) (Answer, error) {
	path := w.Out(out.File)
	in.Vars = with(in.Vars, out.Var, path)
	in.Env = with(in.Env, out.Env, path)
	res, err := w.Session(ctx, in)
	a := Answer{Session: res, r: w.r, what: out.What}
	if err != nil {
		return a, err
	}
	a.Data, a.Missing = w.ReadOut(out.File, out.Max)
	return a, nil
}

// with returns m with k set to v (a copy; m is the caller's).
func with(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for key, val := range m {
		out[key] = val
	}
	out[k] = v
	return out
}

// session renders the formula in force with in and the repository repo
// and runs one session in dir of ws.
func (r *Driver) session(ctx context.Context, dir string, ws *sandbox.Workspace, in SessionInput, repo fs.FS) (claude.Result, error) {
	var env []formula.EnvVar
	for k, v := range in.Env {
		env = append(env, formula.EnvVar{Name: k, Value: v})
	}
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	prompt, f, err := r.Prompt(ctx, formula.RenderInput{Vars: in.Vars, RepoFS: repo, OpsFS: in.OpsFS, Blocks: in.Blocks, Env: env})
	if err != nil {
		return claude.Result{}, fmt.Errorf("%w: %w", ErrSession, err)
	}
	res, err := r.Converse(ctx, Scratch{Workspace: ws, Dir: dir, Prompt: prompt, Formula: f, Env: in.Env})
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
	// Each file is opened inside the copy: a directory the session swaps
	// for a link after the walk saw it leads nowhere outside.
	in, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("%s: read back the session's files: %w", w.r.o.Role, err)
	}
	defer in.Close()
	var out []git.FileChange
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
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
		data, _, err := atomicfile.ReadUntrustedIn(in, filepath.FromSlash(rel), MaxFile)
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

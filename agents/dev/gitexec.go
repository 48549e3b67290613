package dev

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/disinto/disinto/lib/redact"
)

// gitOps is the git work the agent needs. Every method takes a context and
// runs against the agent's own clone; secrets never appear in argv, remote
// URLs or errors.
type gitOps interface {
	// Worktree makes dir a worktree on branch: reused when it already is
	// one, else created from the remote branch when that exists, else from
	// the primary branch. Local commits are never discarded.
	Worktree(ctx context.Context, dir, branch string) error
	// RemoteHead returns the SHA of branch on the forge, "" when absent.
	RemoteHead(ctx context.Context, branch string) (string, error)
	// Head returns the SHA checked out in dir.
	Head(ctx context.Context, dir string) (string, error)
	// Ahead counts the commits of dir's HEAD that the primary branch lacks.
	Ahead(ctx context.Context, dir string) (int, error)
	// Push pushes dir's HEAD to branch (with lease).
	Push(ctx context.Context, dir, branch string) error
	// EmptyCommit commits nothing with msg (to re-trigger CI).
	EmptyCommit(ctx context.Context, dir, msg string) error
	// RemoveWorktree removes the worktree at dir.
	RemoveWorktree(ctx context.Context, dir string) error
	// PushMirror pushes sha as the primary branch to the mirror url.
	PushMirror(ctx context.Context, name, url, sha string) error
	// SessionEnv is what a session needs so its own git push works.
	SessionEnv() map[string]string
}

// Environment variables carrying the git credentials to the credential
// helper configured in the clone; the helper prints them only for "get".
const (
	envGitUser     = "DISINTO_GIT_USER"
	envGitPassword = "DISINTO_GIT_PASSWORD"
	credHelper     = `!f() { test "$1" = get || exit 0; echo "username=${` + envGitUser + `}"; echo "password=${` + envGitPassword + `}"; }; f`
)

// GitOptions configures the git CLI backend.
type GitOptions struct {
	// Clone is the directory of the agent's own clone of the project.
	Clone string
	// RemoteURL is the repository's clone URL, without credentials.
	RemoteURL string
	// User and Password authenticate pushes over HTTP.
	User, Password string
	// Primary is the primary branch.
	Primary string
	// Redactor masks the password in error output.
	Redactor *redact.Redactor
}

// GitCLI runs git for the agent: its own clone, worktrees, pushes with a
// credential helper reading the password from the environment.
type GitCLI struct {
	o GitOptions
}

var _ gitOps = (*GitCLI)(nil)

// NewGit returns the git backend of the agent.
func NewGit(o GitOptions) *GitCLI {
	if o.Redactor == nil {
		o.Redactor = redact.New(o.Password)
	}
	return &GitCLI{o: o}
}

func (g *GitCLI) SessionEnv() map[string]string {
	return map[string]string{envGitUser: g.o.User, envGitPassword: g.o.Password, "GIT_TERMINAL_PROMPT": "0"}
}

func (g *GitCLI) run(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), envGitUser+"="+g.o.User, envGitPassword+"="+g.o.Password,
		"GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if len(msg) > 500 {
			msg = msg[len(msg)-500:]
		}
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, g.o.Redactor.String(msg))
	}
	return strings.TrimSpace(out.String()), nil
}

// ensureClone clones the repository once and configures the helper.
func (g *GitCLI) ensureClone(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(g.o.Clone, ".git")); err == nil {
		_, err := g.run(ctx, g.o.Clone, "fetch", "--prune", "origin")
		return err
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stat clone: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(g.o.Clone), 0o750); err != nil {
		return fmt.Errorf("clone dir: %w", err)
	}
	if _, err := g.run(ctx, filepath.Dir(g.o.Clone), "-c", "credential.helper="+credHelper,
		"clone", "--quiet", g.o.RemoteURL, g.o.Clone); err != nil {
		return err
	}
	for _, kv := range [][2]string{
		{"credential.helper", credHelper},
		{"push.default", "current"},
		{"push.autoSetupRemote", "true"},
		{"user.name", g.o.User},
		{"user.email", g.o.User + "@disinto.invalid"},
	} {
		if _, err := g.run(ctx, g.o.Clone, "config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

func (g *GitCLI) Worktree(ctx context.Context, dir, branch string) error {
	if err := g.ensureClone(ctx); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		cur, err := g.run(ctx, dir, "rev-parse", "--abbrev-ref", "HEAD")
		if err == nil && cur == branch {
			return nil
		}
		if _, err := g.run(ctx, dir, "checkout", branch); err == nil {
			return nil
		}
		return fmt.Errorf("worktree %s is not on %s", dir, branch)
	}
	if _, err := g.run(ctx, g.o.Clone, "worktree", "prune"); err != nil {
		return err
	}
	base := "origin/" + g.o.Primary
	if sha, err := g.RemoteHead(ctx, branch); err != nil {
		return err
	} else if sha != "" {
		base = "origin/" + branch
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return fmt.Errorf("worktree parent: %w", err)
	}
	_, err := g.run(ctx, g.o.Clone, "worktree", "add", "--quiet", "-B", branch, dir, base)
	return err
}

func (g *GitCLI) RemoteHead(ctx context.Context, branch string) (string, error) {
	out, err := g.run(ctx, g.o.Clone, "ls-remote", "origin", "refs/heads/"+branch)
	if err != nil {
		return "", err
	}
	sha, _, _ := strings.Cut(out, "\t")
	return strings.TrimSpace(sha), nil
}

func (g *GitCLI) Head(ctx context.Context, dir string) (string, error) {
	return g.run(ctx, dir, "rev-parse", "HEAD")
}

func (g *GitCLI) Ahead(ctx context.Context, dir string) (int, error) {
	if _, err := g.run(ctx, dir, "fetch", "--quiet", "origin", g.o.Primary); err != nil {
		return 0, err
	}
	out, err := g.run(ctx, dir, "rev-list", "--count", "origin/"+g.o.Primary+"..HEAD")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(out)
	if err != nil {
		return 0, fmt.Errorf("rev-list count %q: %w", out, err)
	}
	return n, nil
}

func (g *GitCLI) Push(ctx context.Context, dir, branch string) error {
	_, err := g.run(ctx, dir, "push", "--quiet", "--force-with-lease", "origin", "HEAD:refs/heads/"+branch)
	return err
}

func (g *GitCLI) EmptyCommit(ctx context.Context, dir, msg string) error {
	_, err := g.run(ctx, dir, "commit", "--quiet", "--allow-empty", "-m", msg)
	return err
}

func (g *GitCLI) RemoveWorktree(ctx context.Context, dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := g.run(ctx, g.o.Clone, "worktree", "remove", "--force", dir); err != nil {
		// Not a registered worktree (a half-created one): only remove it if
		// it is ours, which the caller guarantees by the path it passes.
		if rerr := os.RemoveAll(dir); rerr != nil {
			return errors.Join(err, rerr)
		}
		_, perr := g.run(ctx, g.o.Clone, "worktree", "prune")
		return perr
	}
	return nil
}

func (g *GitCLI) PushMirror(ctx context.Context, name, url, sha string) error {
	if _, err := g.run(ctx, g.o.Clone, "fetch", "--quiet", "origin"); err != nil {
		return err
	}
	_, err := g.run(ctx, g.o.Clone, "push", "--quiet", url, sha+":refs/heads/"+g.o.Primary)
	if err != nil {
		return fmt.Errorf("mirror %s: %w", name, err)
	}
	return nil
}

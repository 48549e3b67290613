package provision

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// git runs the git binary with ctx; extraEnv is added to the environment
// (never to the argument list, which other users can read).
func (p *run) git(ctx context.Context, dir string, extraEnv []string, args ...string) (string, error) {
	bin := p.opts.Git
	if bin == "" {
		bin = "git"
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "LC_ALL=C")
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := strings.TrimSpace(out.String())
	if err != nil {
		if len(text) > 500 {
			text = text[len(text)-500:]
		}
		return text, fmt.Errorf("git %s: %w: %s", args[0], err, text)
	}
	return text, nil
}

// sourceHead returns the branch HEAD of the source points at.
func (p *run) sourceHead(ctx context.Context) (string, error) {
	out, err := p.git(ctx, "", nil, "ls-remote", "--symref", p.opts.Source, "HEAD")
	if err != nil {
		return "", fmt.Errorf("source %s: %w", p.opts.Source, err)
	}
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "ref: refs/heads/"); ok {
			if b, _, ok := strings.Cut(rest, "\t"); ok {
				return b, nil
			}
		}
	}
	return "", fmt.Errorf("source %s: HEAD is not a branch; pass the primary branch", p.opts.Source)
}

// pushSource copies every branch and tag of the source into the (empty)
// project repository, authenticating as the admin through an HTTP header
// passed in the environment.
func (p *run) pushSource(ctx context.Context, slug string) error {
	tmp, err := os.MkdirTemp("", "disinto-init-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	bare := filepath.Join(tmp, "src.git")
	src := p.opts.Source
	if abs, err := filepath.Abs(src); err == nil {
		if _, serr := os.Stat(abs); serr == nil {
			src = abs
		}
	}
	if _, err := p.git(ctx, "", nil, "clone", "--bare", "--quiet", src, bare); err != nil {
		return fmt.Errorf("source %s: %w", p.opts.Source, err)
	}
	if _, err := p.git(ctx, bare, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+p.branch); err != nil {
		return fmt.Errorf("source %s has no branch %q", p.opts.Source, p.branch)
	}
	secret := p.opts.AdminPassword
	if secret == "" {
		secret = p.opts.AdminToken
	}
	auth := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(p.login+":"+secret))
	p.secret(auth, strings.TrimPrefix(auth, "Authorization: Basic "))
	env := []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=" + auth}
	remote := strings.TrimSuffix(p.opts.ForgeURL, "/") + "/" + slug + ".git"
	if _, err := p.git(ctx, bare, env, "push", "--quiet", remote, "refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*"); err != nil {
		return fmt.Errorf("push source to %s: %w", slug, err)
	}
	return nil
}

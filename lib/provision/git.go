package provision

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/redact"
)

// git returns the git runner of the run, authenticated on the forge as
// the admin (by password, else by token, which Forgejo also takes over
// HTTP); every secret of the run is masked in its errors.
func (p *run) git() *git.Git {
	secret := p.opts.AdminPassword
	if secret == "" {
		secret = p.opts.AdminToken
	}
	return git.New(git.Options{
		Binary:      p.opts.Git,
		Credentials: &git.Credentials{URL: p.opts.ForgeURL, Username: p.login, Password: secret},
		Redactor:    redact.New(p.opts.AdminPassword, p.opts.AdminToken),
		Log:         p.log,
	})
}

// sourceHead returns the branch HEAD of the source points at.
func (p *run) sourceHead(ctx context.Context) (string, error) {
	b, err := p.git().DefaultBranch(ctx, p.opts.Source)
	if err != nil {
		return "", fmt.Errorf("source %s: %w; pass the primary branch", p.opts.Source, err)
	}
	return b, nil
}

// pushSource copies every branch and tag of the source into the (empty)
// project repository, as the admin.
func (p *run) pushSource(ctx context.Context, slug string) error {
	tmp, err := os.MkdirTemp("", "disinto-init-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	src := p.opts.Source
	if abs, err := filepath.Abs(src); err == nil {
		if _, serr := os.Stat(abs); serr == nil {
			src = abs
		}
	}
	g := p.git()
	bare, err := g.CloneBare(ctx, src, filepath.Join(tmp, "src.git"))
	if err != nil {
		return fmt.Errorf("source %s: %w", p.opts.Source, err)
	}
	if sha, err := bare.RefSHA(ctx, "refs/heads/"+p.branch); err != nil || sha == "" {
		return fmt.Errorf("source %s has no branch %q", p.opts.Source, p.branch)
	}
	remote := strings.TrimSuffix(p.opts.ForgeURL, "/") + "/" + slug + ".git"
	if err := bare.PushAll(ctx, remote); err != nil {
		return fmt.Errorf("push source to %s: %w", slug, err)
	}
	return nil
}

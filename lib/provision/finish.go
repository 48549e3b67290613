package provision

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/BurntSushi/toml"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
)

// WebhookEvents are the events the daemon's webhook receives: every issue
// and pull request event (reviews included), commit statuses and pushes.
var WebhookEvents = []string{"issues", "pull_request", "status", "push"}

func isNotFound(err error) bool { return errors.Is(err, forge.ErrNotFound) }

// ensureWebhook registers the webhook at WebhookURL on the project
// repository and on its ops repository (whose pushes and pull requests
// wake the vault dispatcher), with the HMAC secret from the env file
// (generated when missing). The forge never shows a secret again, so a
// hook whose secret is not in the env file gets a new one, and a new
// secret is given to both hooks.
func (p *run) ensureWebhook(ctx context.Context) error {
	if p.opts.WebhookURL == "" {
		return nil
	}
	secret := p.env.Get("DISINTO_WEBHOOK_SECRET")
	fresh := secret == "" || p.opts.RotateTokens
	if fresh {
		var err error
		if secret, err = randomHex(p.opts.Random, 32); err != nil {
			return err
		}
		p.secret(secret)
		// Saved before the forge calls: a run stopped in between leaves a
		// hook without a known secret, which the next run repairs.
		if err := p.saveEnv(p.env.Set("DISINTO_WEBHOOK_SECRET", secret)); err != nil {
			return err
		}
	}
	for _, rc := range []*forge.RepoClient{p.admin.Repo(p.owner, p.name), p.admin.Repo(p.owner, p.opsName())} {
		if err := p.ensureHookOn(ctx, rc, secret, fresh); err != nil {
			return err
		}
	}
	return nil
}

// ensureHookOn makes rc's hook at WebhookURL active with secret; an
// existing hook keeps its secret unless fresh.
func (p *run) ensureHookOn(ctx context.Context, rc *forge.RepoClient, secret string, fresh bool) error {
	hooks, err := rc.ListWebhooks(ctx)
	if err != nil {
		return err
	}
	var found *forge.Webhook
	for i := range hooks {
		if hooks[i].URL == p.opts.WebhookURL {
			found = &hooks[i]
			break
		}
	}
	name := rc.Slug() + " -> " + p.opts.WebhookURL
	if found != nil && found.Active && !fresh {
		p.rep.add("webhook", name, StatusPresent, "secret DISINTO_WEBHOOK_SECRET")
		return nil
	}
	in := forge.NewWebhook{URL: p.opts.WebhookURL, Secret: secret, Events: WebhookEvents}
	if found != nil {
		if err := rc.EditWebhook(ctx, found.ID, in); err != nil {
			return err
		}
		p.rep.add("webhook", name, StatusUpdated, "new secret DISINTO_WEBHOOK_SECRET")
		return nil
	}
	if _, err := rc.CreateWebhook(ctx, in); err != nil {
		return err
	}
	p.rep.add("webhook", name, StatusCreated, "secret DISINTO_WEBHOOK_SECRET")
	return nil
}

// ensureProjectFile writes projects/<name>.toml unless it exists; an
// existing file is kept as the operator may have edited it, but it must
// still name this repository.
func (p *run) ensureProjectFile(_ context.Context) error {
	path := p.projectFile()
	data, err := os.ReadFile(path)
	if err == nil {
		cfg, perr := config.Parse(map[string][]byte{path: data}, config.NewEnv(nil))
		if perr != nil {
			return fmt.Errorf("existing project file: %w", perr)
		}
		if got := cfg.Projects[0].Repo; got != p.opts.Repo {
			return fmt.Errorf("existing project file %s is for %s, not %s", path, got, p.opts.Repo)
		}
		if got := cfg.Projects[0].PrimaryBranch; got != p.branch {
			return fmt.Errorf("existing project file %s has primary_branch %q, but the primary branch is %q: set primary_branch in the file", path, got, p.branch)
		}
		p.rep.add("project file", path, StatusPresent, "kept as is")
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read project file: %w", err)
	}
	content := p.projectTOML()
	if _, err := config.Parse(map[string][]byte{path: content}, config.NewEnv(nil)); err != nil {
		return fmt.Errorf("generated project file does not validate: %w", err)
	}
	if err := atomicfile.Write(path, content, 0o644); err != nil {
		return err
	}
	p.rep.add("project file", path, StatusCreated, "")
	return nil
}

// fileBranch returns primary_branch of an existing project file, or "".
func (p *run) fileBranch() (string, error) {
	var raw struct {
		PrimaryBranch string `toml:"primary_branch"`
	}
	_, err := toml.DecodeFile(p.projectFile(), &raw)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("existing project file: %w", err)
	}
	return raw.PrimaryBranch, nil
}

// projectTOML renders the project file.
func (p *run) projectTOML() []byte {
	var b bytes.Buffer
	q := strconv.Quote
	fmt.Fprintf(&b, "# Written by disinto init. Every key is documented in projects/example.toml.example.\n")
	fmt.Fprintf(&b, "name = %s\n", q(p.name))
	fmt.Fprintf(&b, "repo = %s\n", q(p.opts.Repo))
	fmt.Fprintf(&b, "ops_repo = %s\n", q(p.owner+"/"+p.opsName()))
	fmt.Fprintf(&b, "forge_url = %s\n", q(p.opts.ForgeURL))
	fmt.Fprintf(&b, "primary_branch = %s\n", q(p.branch))
	fmt.Fprintf(&b, "\n[ci]\n# none: pull requests go straight to review; statuses or woodpecker once CI posts statuses.\nsystem = \"none\"\n")
	return b.Bytes()
}

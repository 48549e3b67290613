package provision

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// BootstrapTokenPrefix starts the names of the one-time site-admin tokens
// that the compose stack mints with the forge's own CLI (which needs no
// password) and hands to provisioning in a file. Provisioning revokes
// every admin token so named once it has used one.
const BootstrapTokenPrefix = "disinto-bootstrap"

// bootstrapAdmin uses the token in Options.BootstrapTokenFile, if there is
// one, to give the site admin the password from the options unless that
// password logs in already, then revokes the bootstrap tokens and removes
// the file. This way the admin password reaches the forge through the API
// only: the forge's CLI takes passwords on its command line, which every
// user of the host can read.
//
// A missing or empty file, or a token the forge no longer knows (a run
// that stopped after revoking it), means there is nothing to do.
func (p *run) bootstrapAdmin(ctx context.Context) error {
	path := p.opts.BootstrapTokenFile
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bootstrap token: %w", err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		p.removeBootstrap()
		return nil
	}
	p.secret(tok)
	c, err := p.client("", "", tok)
	if err != nil {
		return err
	}
	me, err := c.Me(ctx)
	switch {
	case errors.Is(err, forge.ErrUnauthorized):
		p.removeBootstrap()
		return nil
	case err != nil:
		return fmt.Errorf("bootstrap token %s: %w", path, err)
	}
	if !me.IsAdmin || !strings.EqualFold(me.Login, p.opts.AdminUser) {
		return fmt.Errorf("bootstrap token %s: it belongs to %s, not to the site admin %s", path, me.Login, p.opts.AdminUser)
	}
	ok, err := p.authenticates(ctx, me.Login, p.opts.AdminPassword, "")
	if err != nil {
		return fmt.Errorf("admin login: %w", err)
	}
	if !ok {
		if err := c.SetUserPassword(ctx, me.Login, p.opts.AdminPassword); err != nil {
			return fmt.Errorf("bootstrap: %w", err)
		}
		p.rep.add("admin", me.Login, StatusUpdated, "password set from FORGE_ADMIN_PASS")
	}
	basic, err := p.client(me.Login, p.opts.AdminPassword, "")
	if err != nil {
		return err
	}
	if err := revokeTokens(ctx, basic, func(t forge.Token) bool { return strings.HasPrefix(t.Name, BootstrapTokenPrefix) }); err != nil {
		return fmt.Errorf("revoke bootstrap tokens: %w", err)
	}
	p.removeBootstrap()
	return nil
}

// removeBootstrap deletes the bootstrap token file. The token is revoked
// or useless by then, so a file that cannot be removed is only a warning.
func (p *run) removeBootstrap() {
	if err := os.Remove(p.opts.BootstrapTokenFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		p.log.Warn().Err(err).Msg("bootstrap token file left behind (the token is revoked)")
	}
}

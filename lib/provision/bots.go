package provision

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
)

// botSpec is one forge identity to provision.
type botSpec struct {
	Login    string
	Key      string // token name suffix: disinto-<Key>
	TokenVar string
	PassVar  string
	// UserVar, when set, records Login in the env file: a local-model
	// agent's daemon (DISINTO_DEV_BOT) reads its login from it.
	UserVar string
	Scopes  []string
	// Project and Ops are the collaborator permissions; "" means none.
	Project forge.Permission
	Ops     forge.Permission
}

// coreBots returns the identity of every role of the role table, with
// the variable names lib/config reads, the permissions its row gives it
// on the project and ops repositories (00 §4.1, corrected: review-bot
// needs write on the project or its approvals do not count; architect-bot
// is read-only on the project and writes the ops repository;
// predictor-bot needs write, or the forge drops the labels of the
// predictions it files; filer-bot writes issues only, by its scopes) and
// its token's scopes.
func coreBots() []botSpec {
	var out []botSpec
	for _, spec := range config.RoleSpecs() {
		out = append(out, botSpec{Login: spec.DefaultBotUser(), Key: string(spec.Name), Scopes: spec.Scopes,
			Project: forge.Permission(spec.Project), Ops: forge.Permission(spec.Ops), TokenVar: spec.TokenVar(), PassVar: spec.PassVar()})
	}
	return out
}

// localBots returns the identities of the local-model agents declared in
// an existing project file ([agents.<name>] with forge_user).
func (p *run) localBots() ([]botSpec, error) {
	path := p.projectFile()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read project file: %w", err)
	}
	vals, err := config.ParseEnv(p.env.Path(), bytes.NewReader(envBytes(p.env)))
	if err != nil {
		return nil, err
	}
	cfg, err := config.Parse(map[string][]byte{path: data}, config.NewEnv(vals))
	if err != nil {
		return nil, fmt.Errorf("existing project file: %w", err)
	}
	var out []botSpec
	for _, proj := range cfg.Projects {
		names := make([]string, 0, len(proj.Agents))
		for n := range proj.Agents {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			login := proj.Agents[n].ForgeUser
			if login == "" {
				login = n + "-bot" // the login config.LocalBot expects without FORGE_BOT_USER_<NAME>
			}
			out = append(out, localSpec(n, login))
		}
	}
	return out, nil
}

// localSpec is the identity of local-model dev agent name.
func localSpec(name, login string) botSpec {
	up := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name))
	return botSpec{
		Login: login, Key: name, TokenVar: "FORGE_TOKEN_" + up, PassVar: "FORGE_PASS_" + up,
		UserVar: "FORGE_BOT_USER_" + up, Scopes: config.WriterScopes, Project: forge.PermWrite,
	}
}

func envBytes(e *EnvFile) []byte {
	return []byte(strings.Join(e.lines, "\n") + "\n")
}

// ensureBots provisions every identity: core bots, then local-model bots.
func (p *run) ensureBots(ctx context.Context) error {
	locals, err := p.localBots()
	if err != nil {
		return err
	}
	for _, lb := range p.opts.LocalBots {
		dup := false
		for _, b := range locals {
			dup = dup || b.Login == lb.Login
		}
		if !dup {
			locals = append(locals, localSpec(lb.Name, lb.Login))
		}
	}
	p.bots = append(coreBots(), locals...)
	for _, b := range locals {
		p.localDevs = append(p.localDevs, b.Login)
	}
	for _, b := range p.bots {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("bot %s: %w", b.Login, err)
		}
		if err := p.ensureBot(ctx, b); err != nil {
			return fmt.Errorf("bot %s: %w", b.Login, err)
		}
	}
	return nil
}

// ensureBot makes sure b exists, its password in the env file logs in and
// its token in the env file authenticates as b. What is missing or stale
// is replaced, and the env file is saved after each change so nothing
// created is lost if the run stops.
func (p *run) ensureBot(ctx context.Context, b botSpec) error {
	pass, tok := p.env.Get(b.PassVar), p.env.Get(b.TokenVar)
	p.secret(pass, tok)
	var notes []string
	status := StatusPresent

	u, err := p.admin.GetUser(ctx, b.Login)
	if err == nil && (u.IsAdmin || strings.EqualFold(u.Login, p.login)) {
		// Adopting it would reset a site admin's password (locking the
		// operator out) and give an agent admin rights.
		return fmt.Errorf("%s is a site administrator: a bot needs a user of its own", b.Login)
	}
	switch {
	case errors.Is(err, forge.ErrNotFound):
		if pass, err = p.newPassword(); err != nil {
			return err
		}
		if _, err := p.admin.CreateUser(ctx, forge.NewUser{Login: b.Login, Email: b.Login + "@disinto.local", Password: pass}); err != nil {
			return err
		}
		if err := p.saveEnv(p.env.Set(b.PassVar, pass)); err != nil {
			return err
		}
		status, tok = StatusCreated, ""
	case err != nil:
		return err
	default:
		ok := false
		if pass != "" && !p.opts.RotateTokens {
			if ok, err = p.authenticates(ctx, b.Login, pass, ""); err != nil {
				return err
			}
		}
		if !ok {
			if pass, err = p.newPassword(); err != nil {
				return err
			}
			if err := p.admin.SetUserPassword(ctx, b.Login, pass); err != nil {
				return err
			}
			if err := p.saveEnv(p.env.Set(b.PassVar, pass)); err != nil {
				return err
			}
			status = StatusUpdated
			notes = append(notes, "password reset")
		}
	}

	ok := false
	if tok != "" && !p.opts.RotateTokens {
		if ok, err = p.authenticates(ctx, b.Login, "", tok); err != nil {
			return err
		}
	}
	if !ok {
		if tok, err = p.newToken(ctx, b, pass); err != nil {
			return err
		}
		if err := p.saveEnv(p.env.Set(b.TokenVar, tok)); err != nil {
			return err
		}
		// Only once the new token is saved: a run that stops here leaves
		// a working token, and the next rotation finishes the revoking.
		if err := p.revokeOtherTokens(ctx, b, pass); err != nil {
			return err
		}
		if status == StatusPresent {
			status = StatusUpdated
		}
		notes = append(notes, "new token")
	}
	if b.UserVar != "" {
		if err := p.saveEnv(p.env.Set(b.UserVar, b.Login)); err != nil {
			return err
		}
	}
	detail := fmt.Sprintf("%s, %s [%s]", b.TokenVar, b.PassVar, strings.Join(b.Scopes, " "))
	if len(notes) > 0 && status != StatusCreated {
		detail = strings.Join(notes, ", ") + "; " + detail
	}
	p.rep.add("bot", b.Login, status, detail)
	return nil
}

func (p *run) newPassword() (string, error) {
	s, err := randomString(p.opts.Random, 32)
	if err != nil {
		return "", err
	}
	p.secret(s)
	return s, nil
}

// newToken issues the bot's token disinto-<key>, logging in with pass.
func (p *run) newToken(ctx context.Context, b botSpec, pass string) (string, error) {
	c, err := p.client(b.Login, pass, "")
	if err != nil {
		return "", err
	}
	name := "disinto-" + b.Key
	if err := c.DeleteToken(ctx, name); err != nil && !errors.Is(err, forge.ErrNotFound) {
		return "", err
	}
	tok, err := c.CreateToken(ctx, name, b.Scopes...)
	if err != nil {
		return "", err
	}
	p.secret(tok)
	return tok, nil
}

// revokeOtherTokens deletes every token of the bot but disinto-<key>, the
// one just issued: a token minted by anyone who learnt the bot's password
// must not outlive the token it was issued next to. Listed after the new
// token exists, so one minted meanwhile goes too.
func (p *run) revokeOtherTokens(ctx context.Context, b botSpec, pass string) error {
	c, err := p.client(b.Login, pass, "")
	if err != nil {
		return err
	}
	name := "disinto-" + b.Key
	return revokeTokens(ctx, c, func(t forge.Token) bool { return t.Name != name })
}

// revokeTokens deletes the client user's tokens that match.
func revokeTokens(ctx context.Context, c *forge.Client, match func(forge.Token) bool) error {
	toks, err := c.ListTokens(ctx)
	if err != nil {
		return err
	}
	for _, t := range toks {
		if !match(t) {
			continue
		}
		if err := c.DeleteTokenID(ctx, t.ID); err != nil && !errors.Is(err, forge.ErrNotFound) {
			return err
		}
	}
	return nil
}

// authenticates reports whether the password or token logs in as login.
// A rejected credential is false; other failures are errors.
func (p *run) authenticates(ctx context.Context, login, pass, tok string) (bool, error) {
	user := login
	c, err := p.client(user, pass, tok)
	if err != nil {
		return false, err
	}
	me, err := c.Me(ctx)
	switch {
	case errors.Is(err, forge.ErrUnauthorized), errors.Is(err, forge.ErrForbidden):
		return false, nil
	case err != nil:
		return false, err
	}
	return strings.EqualFold(me.Login, login), nil
}

// TokenScopes returns the scopes provisioning grants the token of role
// (a local-model dev agent's are dev's), for checks of existing tokens.
func TokenScopes(role config.Role) []string {
	spec, _ := config.SpecOf(role)
	return append([]string(nil), spec.Scopes...)
}

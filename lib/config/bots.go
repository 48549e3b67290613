package config

import (
	"errors"
	"fmt"
	"strings"
)

// Bot is the forge identity an agent acts as.
type Bot struct {
	Role     Role
	User     string // expected login, e.g. "dev-bot"; the forge's GET /user is authoritative
	Token    string // API token; never log it
	Password string // for git over HTTP (Forgejo refuses tokens for pushes)
	TokenVar string // the variable the token came from, for error messages
	Fallback bool   // true when the role has no token of its own and acts as dev-bot
}

// DefaultBotUser is the login disinto init creates for each role.
func DefaultBotUser(r Role) string { return string(r) + "-bot" }

// tokenVars lists, per role, the variables that may carry its token, in
// order of preference. The reference spells them FORGE_<ROLE>_TOKEN; the
// FORGE_TOKEN_<ROLE> spelling (used by the llama bots) is accepted too.
func tokenVars(r Role) []string {
	if r == RoleDev {
		return []string{"FORGE_TOKEN_OVERRIDE", "FORGE_TOKEN", "FORGE_DEV_TOKEN", "FORGE_TOKEN_DEV"}
	}
	up := strings.ToUpper(string(r))
	spec, _ := SpecOf(r)
	return append([]string{"FORGE_" + up + "_TOKEN", "FORGE_TOKEN_" + up}, spec.TokenVars...)
}

func passwordVars(r Role) []string {
	if r == RoleDev {
		return []string{"FORGE_PASS", "FORGE_DEV_PASS", "FORGE_PASS_DEV"}
	}
	up := strings.ToUpper(string(r))
	return []string{"FORGE_" + up + "_PASS", "FORGE_PASS_" + up}
}

// Bot resolves the identity of role. A role without a token of its own
// acts as the dev bot (token and password together, so API and git
// pushes act as the same user) only where its row allows the fallback:
// review has none (a review posted by the dev bot would approve its own
// pull requests, and branch protection counts only review-bot's
// approvals), nor have the architect, filer and vault, whose rights are
// narrower than the dev bot's. Without a token and a fallback, or without
// the password of a role that pushes as itself (the row's NeedsPassword),
// the error wraps ErrNoIdentity.
func (c *Config) Bot(role Role) (Bot, error) {
	return botFromEnv(c.Env, role)
}

// ErrNoIdentity: a role has no token of its own and may not act as the
// dev bot.
var ErrNoIdentity = errors.New("no forge identity")

func botFromEnv(env Env, role Role) (Bot, error) {
	spec, ok := SpecOf(role)
	if !ok {
		return Bot{}, role.Validate()
	}
	if name := strings.TrimSpace(env.Get("DISINTO_DEV_BOT")); name != "" && role == RoleDev {
		return localBotFromEnv(env, name)
	}
	b := Bot{Role: role, User: env.Get("FORGE_BOT_USER_" + strings.ToUpper(string(role)))}
	if b.User == "" {
		b.User = DefaultBotUser(role)
	}
	b.Token, b.TokenVar = first(env, tokenVars(role))
	b.Password, _ = first(env, passwordVars(role))
	switch {
	case b.Token != "" && spec.NeedsPassword && b.Password == "":
		return Bot{}, fmt.Errorf("%w: no password for the %s bot: set %s (run disinto init); the %s pushes as itself", ErrNoIdentity, role, passwordVars(role)[0], role)
	case b.Token != "":
		return b, nil
	}
	switch {
	case role == RoleReview:
		return Bot{}, fmt.Errorf("%w: no token for the review bot: set FORGE_REVIEW_TOKEN (review has no fallback to FORGE_TOKEN, or the dev bot would approve its own pull requests)", ErrNoIdentity)
	case role == RoleDev:
		return Bot{}, fmt.Errorf("no token for the dev bot: set FORGE_TOKEN")
	case !spec.Fallback:
		return Bot{}, fmt.Errorf("%w: no token for the %s bot: set %s (run disinto init); the %s does not act as the dev bot", ErrNoIdentity, role, tokenVars(role)[0], role)
	}
	dev, err := botFromEnv(env, RoleDev)
	if err != nil || dev.Token == "" {
		return Bot{}, fmt.Errorf("no token for the %s bot: set %s or FORGE_TOKEN", role, tokenVars(role)[0])
	}
	dev.Role = role
	dev.Fallback = true
	return dev, nil
}

// LocalBot resolves the identity of a local-model agent section
// [agents.<name>]: FORGE_TOKEN_<NAME> / FORGE_<NAME>_TOKEN, no fallback.
func (c *Config) LocalBot(a LocalAgent) (Bot, error) {
	b, err := localBotFromEnv(c.Env, a.Name)
	if err == nil && a.ForgeUser != "" {
		b.User = a.ForgeUser
	}
	return b, err
}

// localBotFromEnv resolves local-model identity name. DISINTO_DEV_BOT=name
// makes a daemon's dev agent act as it (the compose llama service), so two
// dev agents on one forge never share an identity and adopt each other's
// issues. Its login comes from FORGE_BOT_USER_<NAME>, which disinto init
// records, else "<name>-bot".
func localBotFromEnv(env Env, name string) (Bot, error) {
	up := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name))
	b := Bot{Role: RoleDev, User: env.Get("FORGE_BOT_USER_" + up)}
	if b.User == "" {
		b.User = name + "-bot"
	}
	b.Token, b.TokenVar = first(env, []string{"FORGE_TOKEN_" + up, "FORGE_" + up + "_TOKEN"})
	b.Password, _ = first(env, []string{"FORGE_PASS_" + up, "FORGE_" + up + "_PASS"})
	if b.Token == "" {
		return Bot{}, fmt.Errorf("no token for local agent %q: set FORGE_TOKEN_%s (disinto init --local-bot %s=LOGIN writes it)", name, up, name)
	}
	return b, nil
}

func first(env Env, vars []string) (val, name string) {
	for _, v := range vars {
		if s := strings.TrimSpace(env.Get(v)); s != "" {
			return s, v
		}
	}
	return "", ""
}

// TokenVar is the variable `disinto init` writes the role's bot token to:
// the preferred spelling of tokenVars (FORGE_TOKEN for dev, whose
// override variable init never writes).
func (s RoleSpec) TokenVar() string {
	if s.Name == RoleDev {
		return "FORGE_TOKEN"
	}
	return tokenVars(s.Name)[0]
}

// PassVar is the variable `disinto init` writes the role's bot password
// to: the preferred spelling of passwordVars.
func (s RoleSpec) PassVar() string { return passwordVars(s.Name)[0] }

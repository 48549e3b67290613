package main

import (
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/text"
	"github.com/disinto/disinto/lib/vault"
)

// devMirrorVault is the dev agent's way to the mirror pushes of p: the
// vault's requester as the vault bot, with an ops checkout of its own
// under <data>/vault/<project>/<name>. Nil (and a log line) when p has no
// mirrors, or no ops repository or vault identity: then no mirror is
// pushed, since no agent holds a mirror's credential.
func devMirrorVault(d agentDeps, name string) dev.MirrorVault {
	p, s := d.Project, d.Services
	if len(p.Mirrors) == 0 {
		return nil
	}
	v, err := vaultFor(d.Config, p, filepath.Join(s.dataDir, "vault", p.Name, name), s.redactor, d.Log)
	if err != nil {
		d.Log.Warn().Str("project", p.Name).Str("reason", s.redactor.String(err.Error())).Msg("dev: mirrors are not pushed: they go through the vault")
		return nil
	}
	q, err := vault.NewRequester(vault.RequestOptions{Ops: v.ops, Forge: v.forge, Formulas: formulas.FS, Log: d.Log})
	if err != nil {
		return nil
	}
	return q
}

// mirrorNames maps each mirror of p to its URL without credentials: the
// dev agent only names mirrors in its requests, and a token a URL still
// carries (doctor warns of it) never reaches the agent.
func mirrorNames(p *config.Project) map[string]string {
	if len(p.Mirrors) == 0 {
		return nil
	}
	out := make(map[string]string, len(p.Mirrors))
	for n, u := range p.Mirrors {
		out[n] = git.StripCredentials(u)
	}
	return out
}

// vaultRunners are the runners of v's dispatcher: the mirror pushes run
// in the daemon itself (vault.MirrorPusher, as the vault bot, with the
// mirror's secret in git's credential helper for the push only), every
// other formula in the runner container (container; nil without a
// Docker engine, and those actions wait). Nil when neither can run.
func vaultRunners(v *vaultParts, container vault.Runner, dataDir string, log zerolog.Logger) vault.Runner {
	p := v.project
	if len(p.Mirrors) == 0 {
		return container
	}
	g := git.New(git.Options{Credentials: &git.Credentials{URL: p.ForgeURL, Username: v.bot.User, Password: v.bot.Password},
		Redactor: v.redactor, Log: log})
	pusher := vault.NewMirrorPusher(vault.MirrorPusherOptions{
		Mirrors: p.Mirrors, Git: g, SourceURL: p.ForgeURL + "/" + p.Repo + ".git",
		Clone: filepath.Join(dataDir, "vault", p.Name, "mirror-clone"), Primary: p.PrimaryBranch, Log: log,
	})
	return vault.Runners{By: map[string]vault.Runner{vault.MirrorFormula: pusher}, Default: container}
}

// devOpsDir names the ops checkout of a dev agent's mirror requests: one
// per dev agent, since two agents never share a checkout.
func devOpsDir(stateDir string) string {
	if stateDir == "" {
		return "dev-ops"
	}
	return "dev-ops-" + filepath.Base(stateDir)
}

// mirrorLabel says, in status, which mirror push an action is ("" for
// any other action): the pushes pending are the vault's pending
// mirror-push actions.
func mirrorLabel(e vault.Entry) string {
	a := e.Action()
	if a.Formula != vault.MirrorFormula {
		return ""
	}
	return "mirror push to " + a.Vars[vault.MirrorVarName] + " of " + text.ShortSHA(a.Vars[vault.MirrorVarSHA]) + ": "
}

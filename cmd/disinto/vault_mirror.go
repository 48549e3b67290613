package main

import (
	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/git"
)

// devMirrorVault is the dev agent's way to the mirror pushes of p: the
// vault's requester as the vault bot, on the vault bot's ops checkout. Nil (and a log line) when p has no
// mirrors, or no ops repository or vault identity: then no mirror is
// pushed, since no agent holds a mirror's credential.
func devMirrorVault(d daemon.Deps) dev.MirrorVault {
	p, s := d.Project, d.Services
	if len(p.Mirrors) == 0 {
		return nil
	}
	v, err := vaultParts(d)
	if err != nil {
		d.Log.Warn().Str("project", p.Name).Str("reason", s.Redactor.String(err.Error())).Msg("dev: mirrors are not pushed: they go through the vault")
		return nil
	}
	q, err := v.Requester(d.Log)
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

package review

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/provenance"
)

// origin returns whose word pull request pr is (lib/provenance): an
// outsider's when it comes from a fork or from someone without write
// access, or when its body's origin marker says it was made from an
// outsider's text (the dev agent's pull requests say so). What the review
// derives from it, its tech-debt findings, takes that origin. When the
// forge does not say who may write, the pull request counts as an
// outsider's.
func (a *Agent) origin(ctx context.Context, pr forge.PullRequest, log zerolog.Logger) provenance.Origin {
	a.judgeOnce.Do(func() {
		a.judge = provenance.New(provenance.Options{Forge: a.opts.Forge, Now: a.opts.Now})
	})
	o, err := a.judge.Pull(ctx, pr)
	if err != nil {
		log.Warn().Err(err).Msg("origin of the pull request unknown; its findings count as an outsider's")
		return provenance.Outsider
	}
	return o
}

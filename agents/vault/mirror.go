package vault

import (
	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/git"
	vaultlib "github.com/disinto/disinto/lib/vault"
)

// Runners are the runners of v's dispatcher: the mirror pushes run in the
// daemon itself (vaultlib.MirrorPusher, as the vault bot, with the
// mirror's secret in git's credential helper for the push only, from a
// clone at cloneDir; a push that fails waits in queue and runs again
// later, nil records the failure), every other formula in the runner
// container (container; nil without a Docker engine, and those actions
// wait). Nil when neither can run.
func Runners(v *Parts, container vaultlib.Executor, cloneDir string, queue *vaultlib.MirrorQueue, log zerolog.Logger) vaultlib.Executor {
	p := v.Project
	if len(p.Mirrors) == 0 {
		return container
	}
	g := git.New(git.Options{Credentials: &git.Credentials{URL: p.ForgeURL, Username: v.Bot.User, Password: v.Bot.Password},
		Redactor: v.redactor, Log: log})
	pusher := vaultlib.NewMirrorPusher(vaultlib.MirrorPusherOptions{
		Mirrors: p.Mirrors, Git: g, SourceURL: p.ForgeURL + "/" + p.Repo + ".git",
		Clone: cloneDir, Primary: p.PrimaryBranch, Queue: queue, Log: log,
	})
	return vaultlib.Executors{By: map[string]vaultlib.Executor{vaultlib.MirrorFormula: pusher}, Default: container}
}

package vault

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	vaultlib "github.com/disinto/disinto/lib/vault"
)

// TestMirrorRouting: the dispatcher routes mirror pushes to the daemon's
// pusher and leaves other formulas to the container, or pending without
// one; status names the mirror push an action is.
func TestMirrorRouting(t *testing.T) {
	p := &config.Project{Name: "p", Repo: "o/p", ForgeURL: "http://forge:3000", PrimaryBranch: "main",
		Mirrors: map[string]string{"github": "https://github.com/o/p.git", "local": "/srv/p.git"}}
	v := &Parts{Project: p, Bot: config.Bot{User: "vault-bot", Password: "pw"}}
	rs, ok := Runners(v, nil, t.TempDir(), zerolog.Nop()).(vaultlib.Executors)
	if !ok || !rs.Runs(vaultlib.MirrorFormula) || rs.Runs("release") {
		t.Fatalf("runners %#v", rs)
	}
	if _, err := rs.Run(context.Background(), vaultlib.Job{Action: vaultlib.Action{Formula: "release"}}); err == nil {
		t.Fatal("a release ran without a container runner")
	}
	if r := Runners(&Parts{Project: &config.Project{Name: "q"}}, nil, t.TempDir(), zerolog.Nop()); r != nil {
		t.Fatalf("a project without mirrors or engine has runner %#v", r)
	}
	if MirrorLabel(vaultlib.Entry{}) != "" {
		t.Fatal("a label for no mirror push")
	}
}

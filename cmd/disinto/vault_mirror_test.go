package main

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/vault"
)

// TestMirrorWiring: the dev agent gets the mirrors without credentials;
// the dispatcher routes mirror pushes to the daemon's pusher and leaves
// other formulas to the container, or pending without one; status names
// the mirror push an action is.
func TestMirrorWiring(t *testing.T) {
	p := &config.Project{Name: "p", Repo: "o/p", ForgeURL: "http://forge:3000", PrimaryBranch: "main",
		Mirrors: map[string]string{"github": "https://me:ghp-77aa-secret@github.com/o/p.git", "local": "/srv/p.git"}}
	got := mirrorNames(p)
	if got["github"] != "https://github.com/o/p.git" || got["local"] != "/srv/p.git" {
		t.Fatalf("mirrors given to the dev agent: %v", got)
	}
	v := &vaultParts{project: p, bot: config.Bot{User: "vault-bot", Password: "pw"}}
	rs, ok := vaultRunners(v, nil, t.TempDir(), zerolog.Nop()).(vault.Runners)
	if !ok || !rs.Runs(vault.MirrorFormula) || rs.Runs("release") {
		t.Fatalf("runners %#v", rs)
	}
	if _, err := rs.Run(context.Background(), vault.Job{Action: vault.Action{Formula: "release"}}); err == nil {
		t.Fatal("a release ran without a container runner")
	}
	if r := vaultRunners(&vaultParts{project: &config.Project{Name: "q"}}, nil, t.TempDir(), zerolog.Nop()); r != nil {
		t.Fatalf("a project without mirrors or engine has runner %#v", r)
	}
	e := vault.Entry{}
	if mirrorLabel(e) != "" {
		t.Fatal("a label for no mirror push")
	}
}

// TestDoctorWarnsOfMirrorCredentials: a token left in a mirror URL, or a
// mirror's secret in the env file, is a warning naming the fix.
func TestDoctorWarnsOfMirrorCredentials(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/projects/a.toml", "name = \"a\"\nrepo = \"o/a\"\n\n[mirrors]\ngithub = \"https://me:ghp-31c4-secret@github.com/o/a.git\"\n")
	writeFile(t, dir+"/.env", "MIRROR_GITHUB_TOKEN=ghp-31c4-secret\n")
	code, out, errOut := runCLIIn(t, "", "config", "check", "--projects-dir="+dir+"/projects", "--env-file="+dir+"/.env", "--data-dir="+dir+"/data")
	if code != exitOK {
		t.Fatalf("warnings only, yet exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"WARNING  sealed-env a/mirrors.github", "disinto secrets set MIRROR_GITHUB_TOKEN", "WARNING  sealed-env MIRROR_GITHUB_TOKEN"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, "ghp-31c4-secret") {
		t.Error("the token was printed")
	}
}

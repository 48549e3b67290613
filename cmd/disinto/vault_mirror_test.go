package main

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
)

// TestMirrorNames: the dev agent gets the mirrors without credentials.
func TestMirrorNames(t *testing.T) {
	p := &config.Project{Name: "p", Repo: "o/p", ForgeURL: "http://forge:3000", PrimaryBranch: "main",
		Mirrors: map[string]string{"github": "https://me:ghp-77aa-secret@github.com/o/p.git", "local": "/srv/p.git"}}
	got := mirrorNames(p)
	if got["github"] != "https://github.com/o/p.git" || got["local"] != "/srv/p.git" {
		t.Fatalf("mirrors given to the dev agent: %v", got)
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

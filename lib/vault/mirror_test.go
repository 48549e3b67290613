package vault_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/vault"
)

const mirrorSHA = "0123456789abcdef0123456789abcdef01234567"

// TestMirrorAction: the action of a mirror push validates, with the
// mirror's credential named outside the policy's allowlist; that name is
// refused for any other formula; ids are valid for any mirror name.
func TestMirrorAction(t *testing.T) {
	v := vault.Validator{Formulas: formulas}
	a := vault.MirrorAction("o/p", "GitHub Mirror_2", mirrorSHA, "MIRROR_GITHUB_MIRROR_2_TOKEN")
	if a.ID != "mirror-github-mirror-2-"+mirrorSHA[:12] || !vault.ValidID(a.ID) {
		t.Fatalf("id %q", a.ID)
	}
	data, err := vault.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Parse(vault.ActionPath(a.ID), data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Vars[vault.MirrorVarSHA] != mirrorSHA || got.Secrets[0] != "MIRROR_GITHUB_MIRROR_2_TOKEN" {
		t.Fatalf("parsed %+v", got)
	}
	if tier := vault.DefaultPolicy().Classify(got); tier != vault.TierHigh {
		t.Fatalf("without a policy a mirror push is %s, want high", tier)
	}
	rel := []byte("id = \"r1\"\nformula = \"release\"\ncontext = \"Release v1.2.0\"\nsecrets = [\"MIRROR_GITHUB_TOKEN\"]\n")
	if _, err := v.Parse(vault.ActionPath("r1"), rel); !errors.Is(err, vault.ErrNotAllowed) {
		t.Fatalf("a mirror credential for a release: %v", err)
	}
	if long := vault.MirrorActionID(strings.Repeat("x", 80), mirrorSHA); !vault.ValidID(long) {
		t.Fatalf("long name: %q", long)
	}
}

// TestMirrorPusherRefuses: an action naming no configured mirror, or no
// commit, is refused before anything runs, as an outcome (recorded once),
// not an error (retried).
func TestMirrorPusherRefuses(t *testing.T) {
	p := vault.NewMirrorPusher(vault.MirrorPusherOptions{Mirrors: map[string]string{"github": "https://github.com/o/p.git"}})
	for name, a := range map[string]vault.Action{
		"unknown mirror": vault.MirrorAction("o/p", "elsewhere", mirrorSHA, ""),
		"bad commit":     vault.MirrorAction("o/p", "github", "HEAD~1", "MIRROR_GITHUB_TOKEN"),
		"no token":       vault.MirrorAction("o/p", "github", mirrorSHA, "MIRROR_GITHUB_TOKEN"),
	} {
		out, err := p.Run(t.Context(), vault.Job{Action: a, Secrets: map[string]string{}})
		if err != nil || out.ExitCode != -1 || !strings.Contains(out.Logs, "refused") {
			t.Errorf("%s: %+v, %v", name, out, err)
		}
	}
}

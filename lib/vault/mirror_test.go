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

// TestDispatchWithoutRunnerForFormula: with only the mirror pusher wired
// (no Docker engine for the runner container), an approved release stays
// pending, saying why, and nothing is claimed; a runner for it runs it.
func TestDispatchWithoutRunnerForFormula(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.requestApproved("a1")
	run := &countingRunner{}
	only := vault.Executors{By: map[string]vault.Executor{vault.MirrorFormula: run}}
	es, err := r.dispatcher(t.TempDir(), only, secretMap{"GITHUB_TOKEN": token}).Cycle(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, es, "a1"); e.State != vault.StatePending || !strings.Contains(e.Reason, "no runner for formula release") || run.count("a1") != 0 {
		t.Fatalf("entry %+v, runs %d", e, run.count("a1"))
	}
	if _, ok := r.result("a1"); ok {
		t.Fatal("claimed without a runner")
	}
	both := vault.Executors{By: only.By, Default: run}
	if _, err := r.dispatcher(t.TempDir(), both, secretMap{"GITHUB_TOKEN": token}).Cycle(t.Context()); err != nil || run.count("a1") != 1 {
		t.Fatalf("runs %d, %v", run.count("a1"), err)
	}
}

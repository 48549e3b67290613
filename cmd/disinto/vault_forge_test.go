package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/vault"
)

// TestVaultCLIAgainstRealForge: request, list and approve-hint as an
// operator runs them, with the vault bot's own identity, against an ops
// repository on a real forge.
func TestVaultCLIAgainstRealForge(t *testing.T) {
	srv := forgetest.Start(t)
	ctx := t.Context()
	admin, vb := srv.NewUser(t, "admin"), srv.NewUser(t, "vault-bot")
	if _, err := admin.Client.CreateRepo(ctx, forge.NewRepo{Name: "demo-ops", AutoInit: true, DefaultBranch: "main"}); err != nil {
		t.Fatal(err)
	}
	ops := admin.Client.Repo(admin.Login, "demo-ops")
	if err := ops.AddCollaborator(ctx, vb.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	policy, err := os.ReadFile("../../lib/provision/opslayout/vault/policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.CreateFiles(ctx, "main", "policy", []forge.NewFile{{Path: "vault/policy.toml", Content: policy}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	projects, env, data := filepath.Join(dir, "projects"), filepath.Join(dir, ".env"), filepath.Join(dir, "data")
	writeFile(t, filepath.Join(projects, "demo.toml"), "name = \"demo\"\nrepo = \""+admin.Login+"/demo\"\nops_repo = \""+
		admin.Login+"/demo-ops\"\nforge_url = \""+srv.URL+"\"\n")
	writeFile(t, env, "FORGE_TOKEN=dev-token-unused\nFORGE_VAULT_TOKEN="+vb.Token+"\nFORGE_VAULT_PASS="+vb.Password+
		"\nFORGE_BOT_USER_VAULT="+vb.Login+"\nFORGE_ADMIN_USER="+admin.Login+"\n")
	action := filepath.Join(dir, "release-v1-2-0.toml")
	writeFile(t, action, "id = \"release-v1-2-0\"\nformula = \"release\"\ncontext = \"Release v1.2.0\"\nsecrets = [\"GITHUB_TOKEN\"]\n"+
		"vars = { version = \"v1.2.0\", sha = \"0123456789abcdef0123456789abcdef01234567\" }\n")
	flags := []string{"--projects-dir", projects, "--env-file", env, "--data-dir", data}
	cli := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, nil, append(args, flags...)...)
		if code != exitOK {
			t.Fatalf("%v: code %d\n%s\n%s", args, code, out, errOut)
		}
		if strings.Contains(out+errOut, vb.Token) || strings.Contains(out+errOut, vb.Password) {
			t.Fatalf("%v printed a credential", args)
		}
		return out
	}
	cliFails := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, nil, append(args, flags...)...)
		if code != exitFailure {
			t.Fatalf("%v: code %d, want %d\n%s\n%s", args, code, exitFailure, out, errOut)
		}
		return out + errOut
	}
	if out := cli("vault", "request", "--file", action); !strings.Contains(out, "high tier, pull request #1") {
		t.Fatalf("request: %q", out)
	}
	if out := cli("vault", "list"); !strings.Contains(out, "release-v1-2-0") || !strings.Contains(out, "pending") {
		t.Fatalf("list before approval: %q", out)
	}
	pr, err := ops.GetPull(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if out := cli("vault", "approve-hint", "release-v1-2-0"); !strings.Contains(out, pr.HeadSHA) || !strings.Contains(out, admin.Login) {
		t.Fatalf("approve-hint: %q", out)
	}
	if _, err := ops.CreateReview(ctx, 1, forge.NewReview{Event: forge.ReviewApprove, CommitID: pr.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	if err := ops.Merge(ctx, 1, forge.MergeOptions{HeadSHA: pr.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	out := cli("vault", "list")
	if !strings.Contains(out, "ready") || !strings.Contains(out, "approved by "+admin.Login) {
		t.Fatalf("list after approval: %q", out)
	}
	if out := cli("vault", "show", "release-v1-2-0"); !strings.Contains(out, `formula = "release"`) {
		t.Fatalf("show: %q", out)
	}
	// The operator gives it up: recorded, and never run.
	if out := cli("vault", "drop", "release-v1-2-0", "--reason", "not this release"); !strings.Contains(out, "dropped release-v1-2-0") {
		t.Fatalf("drop: %q", out)
	}
	if out := cli("vault", "list"); !strings.Contains(out, "dropped") || !strings.Contains(out, "dropped by an operator") {
		t.Fatalf("list after drop: %q", out)
	}

	// Run again: a new attempt, which waits for an approval of its own as
	// the first did; an attempt without one is refused.
	if out := cli("vault", "run", "release-v1-2-0"); !strings.Contains(out, "release-v1-2-0-r2: a new attempt of release-v1-2-0 (dropped), high tier") ||
		!strings.Contains(out, "pull request #2") {
		t.Fatalf("run a dropped release: %q", out)
	}
	again, err := ops.GetFile(ctx, "vault/actions/release-v1-2-0-r2.toml", "vault/release-v1-2-0-r2")
	if err != nil || !strings.Contains(string(again.Content), `formula = "release"`) || !strings.Contains(string(again.Content), "0123456789abcdef0123456789abcdef01234567") {
		t.Fatalf("the new attempt's action file: %v\n%s", err, again.Content)
	}
	if out := cliFails("vault", "run", "release-v1-2-0-r2"); !strings.Contains(out, "vault action release-v1-2-0-r2 is not approved: pull request #2 awaits an administrator's approval") {
		t.Fatalf("run an attempt without approval: %q", out)
	}
	if out := cliFails("vault", "run", "no-such-action"); !strings.Contains(out, `no vault action "no-such-action"`) {
		t.Fatalf("run an unknown action: %q", out)
	}

	// A low-tier action needs no human: its new attempt is committed by
	// the vault bot, ready for the dispatcher.
	mirror := filepath.Join(dir, "mirror.toml")
	writeFile(t, mirror, "id = \"mirror-github-0a1b2c3d\"\nformula = \"mirror-push\"\ncontext = \"Push main to github\"\nsecrets = []\n"+
		"vars = { mirror = \"github\", sha = \"0123456789abcdef0123456789abcdef01234567\", project = \"demo\" }\n")
	if out := cli("vault", "request", "--file", mirror); !strings.Contains(out, "mirror-github-0a1b2c3d: low tier, committed") {
		t.Fatalf("request a mirror push: %q", out)
	}
	if out := cliFails("vault", "run", "mirror-github-0a1b2c3d"); !strings.Contains(out, "is approved and not run yet") {
		t.Fatalf("run an action not run yet: %q", out)
	}
	failed, err := vault.Result{ID: "mirror-github-0a1b2c3d", Status: vault.StatusFailed, ExitCode: 128, Dispatcher: "d1",
		Started: time.Now().UTC(), Finished: time.Now().UTC(), Logs: "remote: Repository not found"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.CreateFiles(ctx, "main", "vault: result of mirror-github-0a1b2c3d",
		[]forge.NewFile{{Path: vault.ResultPath("mirror-github-0a1b2c3d"), Content: failed}}); err != nil {
		t.Fatal(err)
	}
	if out := cli("vault", "run", "mirror-github-0a1b2c3d"); !strings.Contains(out, "mirror-github-0a1b2c3d-r2: a new attempt of mirror-github-0a1b2c3d (failed), low tier") ||
		!strings.Contains(out, "committed directly") {
		t.Fatalf("run a failed mirror push: %q", out)
	}
	out = cli("vault", "list")
	if !regexp.MustCompile(`(?m)^mirror-github-0a1b2c3d-r2\s+low\s+ready\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^release-v1-2-0-r2\s+high\s+pending\s`).MatchString(out) {
		t.Fatalf("list after the reruns: %q", out)
	}
}

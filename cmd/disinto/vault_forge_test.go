package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
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
}

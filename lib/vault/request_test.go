package vault_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/vault"
)

// planner is a medium-tier action.
func planner(id string) []byte {
	return []byte("id = \"" + id + "\"\nformula = \"run-planner\"\ncontext = \"Plan the next sprint\"\nsecrets = [\"GITHUB_TOKEN\"]\n")
}

// triage is a low-tier action.
func triage(id string) []byte {
	return []byte("id = \"" + id + "\"\nformula = \"triage\"\ncontext = \"Triage issue 12\"\nsecrets = []\nvars = { issue = \"12\" }\n")
}

// TestRequestPR is spec 70 §3.10 scenarios 1, 2 and 6.
func TestRequestPR(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := t.Context()
	q := r.requester()
	content := planner("a1")
	rec, err := q.Request(ctx, content)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Mode != vault.ModePR || rec.PR == 0 || rec.Tier != vault.TierMedium {
		t.Fatalf("receipt %+v", rec)
	}
	repo := r.as(r.admin)
	f, err := repo.GetFile(ctx, vault.ActionPath("a1"), "vault/a1")
	if err != nil || !bytes.Equal(f.Content, content) {
		t.Fatalf("branch file %q, %v", f.Content, err)
	}
	pr, err := repo.GetPull(ctx, rec.PR)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Title != "vault: a1" || pr.Base != "main" || pr.Head != "vault/a1" || pr.Author != r.vault.Login {
		t.Fatalf("pull request %+v", pr)
	}
	for _, want := range []string{"Plan the next sprint", "run-planner", "GITHUB_TOKEN"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, pr.Body)
		}
	}
	if !slices.Contains(pr.Labels, forge.LabelVault) || !slices.Contains(pr.Labels, forge.LabelPendingApproval) {
		t.Errorf("labels %v", pr.Labels)
	}
	again, err := r.requester().Request(ctx, content)
	if err != nil || again.PR != rec.PR {
		t.Fatalf("second request: %+v, %v", again, err)
	}
	pulls, err := repo.ListPulls(ctx, forge.StateAll)
	if err != nil || len(pulls) != 1 {
		t.Fatalf("pull requests: %d, %v", len(pulls), err)
	}
	// Another action under the same id is refused.
	other := bytes.Replace(content, []byte("next sprint"), []byte("other sprint"), 1)
	if _, err := q.Request(ctx, other); !errors.Is(err, vault.ErrDuplicateID) {
		t.Fatalf("other action, same id: %v", err)
	}
}

// TestRequestDirect is §3.10 scenario 3: a low-tier action lands on main
// as the vault identity, first line dispatch_mode = "direct", no PR.
func TestRequestDirect(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := t.Context()
	rec, err := r.requester().Request(ctx, triage("a2"))
	if err != nil || rec.Mode != vault.ModeDirect || rec.Commit == "" {
		t.Fatalf("receipt %+v, %v", rec, err)
	}
	repo := r.as(r.admin)
	f, err := repo.GetFile(ctx, vault.ActionPath("a2"), "main")
	if err != nil || !strings.HasPrefix(string(f.Content), `dispatch_mode = "direct"`+"\n") {
		t.Fatalf("file %q, %v", f.Content, err)
	}
	pulls, _ := repo.ListPulls(ctx, forge.StateAll)
	if len(pulls) != 0 {
		t.Fatalf("%d pull requests", len(pulls))
	}
	cs, err := repo.PathCommits(ctx, "main", vault.ActionPath("a2"))
	_, email := git.Identity(r.vault.Login)
	if err != nil || len(cs) != 1 || cs[0].AuthorEmail != email {
		t.Fatalf("commits %+v, %v", cs, err)
	}
	again, err := r.requester().Request(ctx, triage("a2"))
	if err != nil || !again.Existing || again.Mode != vault.ModeDirect {
		t.Fatalf("second request %+v, %v", again, err)
	}
}

// TestRequestNeedsVaultIdentity is §3.10 scenario 4.
func TestRequestNeedsVaultIdentity(t *testing.T) {
	if _, err := vault.NewRequester(vault.RequestOptions{Formulas: formulas}); !errors.Is(err, vault.ErrNoVaultIdentity) {
		t.Fatalf("got %v", err)
	}
}

// TestRequestInvalid is §3.10 scenario 5: nothing is created.
func TestRequestInvalid(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := t.Context()
	bad := append(planner("a3"), []byte("unblocks = [\"#1\"]\n")...)
	if _, err := r.requester().Request(ctx, bad); !errors.Is(err, vault.ErrUnknownField) {
		t.Fatalf("got %v", err)
	}
	// A low-tier action its formula can never render is refused before
	// it is committed, not after, at dispatch.
	novars := []byte("id = \"a4\"\nformula = \"triage\"\ncontext = \"Triage\"\nsecrets = []\n")
	if _, err := r.requester().Request(ctx, novars); !errors.Is(err, vault.ErrMissingVar) || !strings.Contains(err.Error(), "vars.issue") {
		t.Fatalf("an action without its formula's variables: %v", err)
	}
	repo := r.as(r.admin)
	if _, err := repo.GetFile(ctx, vault.ActionPath("a4"), "main"); !errors.Is(err, forge.ErrNotFound) {
		t.Errorf("file of a4: %v", err)
	}
	if _, err := repo.GetBranch(ctx, "vault/a3"); !errors.Is(err, forge.ErrNotFound) {
		t.Errorf("branch: %v", err)
	}
	if pulls, _ := repo.ListPulls(ctx, forge.StateAll); len(pulls) != 0 {
		t.Errorf("%d pull requests", len(pulls))
	}
	if _, err := repo.GetFile(ctx, vault.ActionPath("a3"), "main"); !errors.Is(err, forge.ErrNotFound) {
		t.Errorf("file: %v", err)
	}
}

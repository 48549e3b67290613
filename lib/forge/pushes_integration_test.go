package forge_test

import (
	"slices"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/wait"
)

// The forge's record of pushes names who pushed, whatever the commit
// says: in a private repository two writers each push a commit, and each
// one's own record lists only their commit, on the branch they pushed.
func TestPushesBy(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Gitea")
	}
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	owner, bob := srv.NewUser(t, "owner"), srv.NewUser(t, "bob")
	r, err := owner.Client.CreateRepo(ctx, forge.NewRepo{Name: srv.Unique("pushes"), AutoInit: true, DefaultBranch: "main", Private: true})
	if err != nil {
		t.Fatal(err)
	}
	asOwner, asBob := owner.Client.Repo(r.Owner, r.Name), bob.Client.Repo(r.Owner, r.Name)
	if err := asOwner.AddCollaborator(ctx, bob.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	head := func(repo *forge.RepoClient, path string) string {
		t.Helper()
		if err := repo.CreateFiles(ctx, "main", "add "+path, []forge.NewFile{{Path: path, Content: []byte("x\n")}}); err != nil {
			t.Fatal(err)
		}
		b, err := repo.GetBranch(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		return b.SHA
	}
	ownerSHA, bobSHA := head(asOwner, "a.txt"), head(asBob, "b.txt")
	meOwner, err := owner.Client.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The forge writes the record from a queue, moments after the push.
	pushesWith := func(repo *forge.RepoClient, login, sha string) []forge.Push {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; {
			got, _, err := repo.PushesBy(ctx, login, 1)
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(got, func(p forge.Push) bool { return slices.Contains(p.Commits, sha) }) || time.Now().After(deadline) {
				return got
			}
			if err := wait.For(ctx, 200*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := pushesWith(asOwner, owner.Login, ownerSHA)
	var found bool
	for _, p := range got {
		if slices.Contains(p.Commits, bobSHA) {
			t.Errorf("bob's commit is in the owner's pushes: %+v", p)
		}
		if slices.Contains(p.Commits, ownerSHA) {
			found = true
			if p.PusherID != meOwner.ID || p.Pusher != owner.Login || p.Branch != "main" || p.RepoID != r.ID || p.Total != 1 {
				t.Errorf("the owner's push %+v; want pusher %d (%s), branch main, repo %d, one commit", p, meOwner.ID, owner.Login, r.ID)
			}
		}
	}
	if !found {
		t.Fatalf("the owner's commit %s is in none of its pushes: %+v", ownerSHA, got)
	}
	// A collaborator reads its own pushes to a private repository.
	if theirs := pushesWith(asBob, bob.Login, bobSHA); !slices.ContainsFunc(theirs, func(p forge.Push) bool {
		return slices.Contains(p.Commits, bobSHA) && !slices.Contains(p.Commits, ownerSHA)
	}) {
		t.Errorf("bob's own pushes %+v lack his commit %s alone", theirs, bobSHA)
	}
	// Another account's feed read by the owner hides the private pushes.
	if theirs, _, err := asOwner.PushesBy(ctx, bob.Login, 1); err != nil || len(theirs) != 0 {
		t.Errorf("bob's pushes as the owner sees them: %+v, %v; want none of a private repository", theirs, err)
	}
}

package ops_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// TestProposeOnce: two proposers with checkouts of their own propose the
// same branch at once; one pull request exists, both get it, and a third
// proposal later returns it too, merged or not.
func TestProposeOnce(t *testing.T) {
	_, u, p := newOpsRepo(t)
	repo := u.Client.Repo(u.Login, "ops")
	prop := ops.Proposal{Branch: "vault/a1", Title: "vault: a1", Body: "body", Message: "vault: add a1",
		Changes: []git.FileChange{{Path: "vault/actions/a1.toml", Content: []byte("id = \"a1\"\n")}}}
	var wg sync.WaitGroup
	got := make([]forge.PullRequest, 2)
	errs := make([]error, 2)
	for i := range got {
		wp := p
		wp.Dir = filepath.Join(t.TempDir(), "ops")
		r := open(wp)
		wg.Go(func() { got[i], errs[i] = r.Propose(t.Context(), repo, prop) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("proposer %d: %v", i, err)
		}
	}
	if got[0].Number == 0 || got[0].Number != got[1].Number {
		t.Fatalf("pull requests #%d and #%d", got[0].Number, got[1].Number)
	}
	pulls, err := repo.ListPulls(t.Context(), forge.StateAll)
	if err != nil || len(pulls) != 1 {
		t.Fatalf("%d pull requests, %v", len(pulls), err)
	}
	f, err := repo.GetFile(t.Context(), "vault/actions/a1.toml", "vault/a1")
	if err != nil || string(f.Content) != "id = \"a1\"\n" {
		t.Fatalf("file on the branch %q, %v", f.Content, err)
	}
	if err := repo.Merge(t.Context(), got[0].Number, forge.MergeOptions{HeadSHA: got[0].HeadSHA}); err != nil {
		t.Fatal(err)
	}
	p.Dir = filepath.Join(t.TempDir(), "ops")
	again, err := open(p).Propose(t.Context(), repo, prop)
	if err != nil || again.Number != got[0].Number || !again.Merged {
		t.Fatalf("after merge: %+v, %v", again, err)
	}
}

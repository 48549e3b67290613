package forge_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// landedPull leaves pull request pr open with its head on main, as a
// merge cut short after its push does: a second pull request of the same
// head is merged.
func landedPull(t *testing.T, r *forge.RepoClient, n int) (pr forge.PullRequest, head string) {
	t.Helper()
	ctx := ctxFor(t)
	br := fmt.Sprintf("fix/issue-%d", n)
	val(r.CreateBranch(ctx, br, "main")).must(t)
	head = commitOn(t, r, br, fmt.Sprintf("landed-%d.txt", n), "landed\n")
	pr = val(r.CreatePull(ctx, forge.NewPull{Title: br, Head: br, Base: "main"})).must(t)
	twin := br + "-twin"
	val(r.CreateBranch(ctx, twin, br)).must(t)
	tw := val(r.CreatePull(ctx, forge.NewPull{Title: twin, Head: twin, Base: "main"})).must(t)
	ok(t, r.Merge(ctx, tw.Number, forge.MergeOptions{HeadSHA: head}))
	return pr, head
}

// TestMergeRecordsALandedHead: Gitea answers "try again later" for good
// on a pull request whose head reached the base branch unrecorded. Merge
// marks it merged by the commit that brought the head in where the
// repository allows that, and says where it landed where it does not.
func TestMergeRecordsALandedHead(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)

	allowed := srv.NewProject(t, "landed").Repo
	pr, head := landedPull(t, allowed, 1)
	ok(t, allowed.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: head}))
	p := val(allowed.GetPull(ctx, pr.Number)).must(t)
	if !p.Merged || p.MergedSHA == "" {
		t.Fatalf("landed pull request after Merge: %+v, want merged", p)
	}
	main := val(allowed.GetBranch(ctx, "main")).must(t)
	if p.MergedSHA != main.SHA {
		t.Errorf("recorded merge commit %s, want the twin's merge %s", p.MergedSHA, main.SHA)
	}

	u := srv.NewUser(t, "landed-owner")
	plain := srv.NewRepo(t, u, "landed-plain")
	pr, head = landedPull(t, plain, 2)
	err := plain.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: head})
	var l *forge.LandedError
	if !errors.As(err, &l) || !errors.Is(err, forge.ErrMergeLanded) {
		t.Fatalf("Merge of a landed head without manual merges = %v, want a LandedError", err)
	}
	if main := val(plain.GetBranch(ctx, "main")).must(t); l.SHA != main.SHA || l.PR != pr.Number {
		t.Errorf("landed error = %+v, want pull request #%d landed as %s", l, pr.Number, main.SHA)
	}
	if p := val(plain.GetPull(ctx, pr.Number)).must(t); p.Merged || p.State != forge.StateOpen {
		t.Errorf("pull request after a refused record: %+v, want open", p)
	}
	if changed := val(plain.EnsureManualMerge(ctx)).must(t); !changed {
		t.Error("EnsureManualMerge on a fresh repository changed nothing")
	}
	if changed := val(plain.EnsureManualMerge(ctx)).must(t); changed {
		t.Error("EnsureManualMerge changed the setting twice")
	}
	ok(t, plain.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: head}))
	if p := val(plain.GetPull(ctx, pr.Number)).must(t); !p.Merged {
		t.Errorf("pull request after manual merges were allowed: %+v, want merged", p)
	}
}

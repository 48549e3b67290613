package vault_test

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/vault"
)

// putOn commits content at path on branch as the dev bot, through the API.
func (r *rig) putOn(branch, path, content string) {
	r.t.Helper()
	ctx := r.t.Context()
	dev := r.as(r.dev)
	var sha string
	if f, err := dev.GetFile(ctx, path, branch); err == nil {
		sha = f.SHA
	}
	if _, err := dev.PutFile(ctx, forge.FileChange{Path: path, Content: []byte(content), SHA: sha, Branch: branch, Message: "edit " + path}); err != nil {
		r.t.Fatal(err)
	}
}

// mergeAs merges pull request n as the admin in style (merge, rebase,
// squash) and returns the pull request as the forge then records it.
func (r *rig) mergeAs(n int64, style string) forge.PullRequest {
	r.t.Helper()
	ctx := r.t.Context()
	admin := r.as(r.admin)
	pr, err := admin.GetPull(ctx, n)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := admin.Merge(ctx, n, forge.MergeOptions{HeadSHA: pr.HeadSHA, Style: style}); err != nil {
		r.t.Fatal(err)
	}
	if pr, err = admin.GetPull(ctx, n); err != nil {
		r.t.Fatal(err)
	}
	if !pr.Merged || pr.MergedSHA == "" {
		r.t.Fatalf("not recorded as merged: %+v", pr)
	}
	return pr
}

// requestTwoCommits files the high-tier action a1 and adds a second
// commit to its pull request (notes beside the action), then moves main
// on, so that a rebase rewrites both commits. It returns the pull request.
func (r *rig) requestTwoCommits() int64 {
	r.t.Helper()
	rec, err := r.requester().Request(r.t.Context(), releaseAction("a1"))
	if err != nil {
		r.t.Fatal(err)
	}
	r.putOn("vault/a1", "vault/notes/a1.md", "why a1\n")
	r.putOn("main", "README.md", "main moved on\n")
	return rec.PR
}

// cycle runs one dispatcher cycle and returns a1's entry and run count.
func (r *rig) cycle() (vault.Entry, int) {
	r.t.Helper()
	run := &countingRunner{}
	es, err := r.dispatcher(r.t.TempDir(), run, secretMap{"GITHUB_TOKEN": token}).Cycle(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	return entry(r.t, es, "a1"), run.count("a1")
}

// TestDispatchRebaseMerged: an approved pull request merged by rebase
// runs: its commits on main are new, but they are the pull request's
// rebased, ending at the merge commit the forge records, and carry the
// approved head's action.
// Both rebase styles: fast-forward onto the rebased commits, and a merge
// commit over them (rebase-merge).
func TestDispatchRebaseMerged(t *testing.T) {
	t.Parallel()
	for _, style := range []string{"rebase", "rebase-merge"} {
		t.Run(style, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			n := r.requestTwoCommits()
			approved := r.approve(n, r.admin)
			pr := r.mergeAs(n, style)
			if pr.MergedSHA == approved {
				t.Fatalf("the rebase kept the approved head %s: nothing was rewritten", approved)
			}
			e, runs := r.cycle()
			if e.State != vault.StateRan || runs != 1 || !strings.Contains(e.Approval, "rebase") {
				t.Fatalf("entry %+v, runs %d", e, runs)
			}
		})
	}
}

// TestDispatchRebasePushAfterApproval: a change to the action pushed to
// the pull request after the approval, then merged by rebase, does not
// run; nor do commits pushed to main after an approved rebase merge, even
// when they leave the action as approved.
func TestDispatchRebasePushAfterApproval(t *testing.T) {
	t.Parallel()
	t.Run("on the branch", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		n := r.requestTwoCommits()
		r.approve(n, r.admin)
		r.putOn("vault/a1", vault.ActionPath("a1"), string(releaseAction("a1"))+"timeout_minutes = 5\n")
		r.mergeAs(n, "rebase")
		if e, runs := r.cycle(); e.State != vault.StatePending || runs != 0 || !strings.Contains(e.Reason, "not at its final head") {
			t.Fatalf("entry %+v, runs %d", e, runs)
		}
	})
	t.Run("on main", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		n := r.requestTwoCommits()
		r.approve(n, r.admin)
		r.mergeAs(n, "rebase")
		// Changed and changed back: the content is the approved one, the
		// commits are not the merge's.
		r.putOn("main", vault.ActionPath("a1"), strings.Replace(string(releaseAction("a1")), "v1.2.0", "v6.6.6", 1))
		r.putOn("main", vault.ActionPath("a1"), string(releaseAction("a1")))
		if e, runs := r.cycle(); e.State != vault.StatePending || runs != 0 || !strings.Contains(e.Reason, "outside pull request") {
			t.Fatalf("entry %+v, runs %d", e, runs)
		}
	})
}

// TestDispatchSquashMerged: a squash merge is accepted like a rebase: the
// one commit on main is the merge commit the forge records for the pull
// request, and its change to the action is the approved head's.
func TestDispatchSquashMerged(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	n := r.requestTwoCommits()
	r.approve(n, r.admin)
	r.mergeAs(n, "squash")
	if e, runs := r.cycle(); e.State != vault.StateRan || runs != 1 {
		t.Fatalf("entry %+v, runs %d", e, runs)
	}
}

// TestDispatchSquashOverDirectPush is §5.11 scenario 7 with a squash: an
// action pushed to main by a bot, then an approved pull request from
// vault/<id> that never showed it (its branch starts after the push and
// only adds notes), squash-merged: the push stays outside the approval.
func TestDispatchSquashOverDirectPush(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := t.Context()
	r.pushDirect(r.dev, "a1", releaseAction("a1"))
	dev := r.as(r.dev)
	if _, err := dev.CreateBranch(ctx, "vault/a1", "main"); err != nil {
		t.Fatal(err)
	}
	r.putOn("vault/a1", "vault/notes/a1.md", "one\n")
	r.putOn("vault/a1", "vault/notes/a1.md", "two\n")
	pr, err := dev.CreatePull(ctx, forge.NewPull{Title: "vault: a1", Head: "vault/a1", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	r.approve(pr.Number, r.admin)
	r.mergeAs(pr.Number, "squash")
	if e, runs := r.cycle(); e.State != vault.StatePending || runs != 0 || !strings.Contains(e.Reason, "where its branch started") {
		t.Fatalf("entry %+v, runs %d", e, runs)
	}
}

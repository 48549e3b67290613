package forge_test

import (
	"slices"
	"testing"

	giteasdk "code.gitea.io/sdk/gitea"

	"github.com/disinto/disinto/lib/forge"
)

// TestLabelRecreatedElsewhere: a label deleted and recreated by someone
// else gets a new id; a client that cached the old one must still add and
// remove it instead of silently doing nothing (the forge ignores unknown
// ids on add) or failing (it rejects them on remove).
func TestLabelRecreatedElsewhere(t *testing.T) {
	t.Parallel()
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	u := srv.NewUser(t, "relabel")
	repo := srv.NewRepo(t, u, "relabel")
	val(repo.EnsureLabels(ctx)).must(t) // caches every id
	sdk, err := giteasdk.NewClient(srv.URL, giteasdk.SetToken(u.Token), giteasdk.SetGiteaVersion(""))
	ok(t, err)
	recreate := func(name forge.LabelName) {
		t.Helper()
		ls, _, err := sdk.ListRepoLabels(repo.Owner(), repo.Name(), giteasdk.ListLabelsOptions{ListOptions: giteasdk.ListOptions{PageSize: 50}})
		ok(t, err)
		i := slices.IndexFunc(ls, func(l *giteasdk.Label) bool { return l.Name == string(name) })
		if i < 0 {
			t.Fatalf("label %q missing", name)
		}
		_, err = sdk.DeleteLabel(repo.Owner(), repo.Name(), ls[i].ID)
		ok(t, err)
		// Another client (a re-run of provisioning) recreates it.
		val(srv.Client(t, u.Token, u.Login).Repo(repo.Owner(), repo.Name()).EnsureLabels(ctx)).must(t)
	}

	recreate(forge.LabelInProgress)
	iss := val(repo.CreateIssue(ctx, forge.NewIssue{Title: "t", Labels: []forge.LabelName{forge.LabelInProgress}})).must(t)
	if !iss.HasLabel(forge.LabelInProgress) {
		t.Fatalf("created issue labels = %v, want in-progress", iss.Labels)
	}
	if got := val(repo.GetIssue(ctx, iss.Number)).must(t); !got.HasLabel(forge.LabelInProgress) {
		t.Fatalf("issue labels = %v, want in-progress", got.Labels)
	}

	recreate(forge.LabelBacklog)
	ok(t, repo.AddLabels(ctx, iss.Number, forge.LabelBacklog))
	if got := val(repo.GetIssue(ctx, iss.Number)).must(t); !got.HasLabel(forge.LabelBacklog) {
		t.Fatalf("after add: labels = %v, want backlog", got.Labels)
	}

	recreate(forge.LabelInProgress) // also drops it from the issue
	ok(t, repo.AddLabels(ctx, iss.Number, forge.LabelInProgress))
	recreate(forge.LabelBacklog)
	ok(t, repo.AddLabels(ctx, iss.Number, forge.LabelBacklog))
	recreate(forge.LabelInProgress)
	ok(t, repo.AddLabels(ctx, iss.Number, forge.LabelInProgress))
	recreate(forge.LabelBacklog)
	ok(t, repo.AddLabels(ctx, iss.Number, forge.LabelBacklog))
	if got := val(repo.GetIssue(ctx, iss.Number)).must(t); !got.HasLabel(forge.LabelBacklog) || !got.HasLabel(forge.LabelInProgress) {
		t.Fatalf("labels = %v, want backlog and in-progress", got.Labels)
	}
	// Only the client that added them knows the new ids: remove through a
	// client whose cache holds the ids from before the last recreation.
	stale := srv.Client(t, u.Token, u.Login).Repo(repo.Owner(), repo.Name())
	val(stale.ListLabels(ctx)).must(t)
	recreate(forge.LabelPriority)
	ok(t, repo.AddLabels(ctx, iss.Number, forge.LabelPriority))
	recreate(forge.LabelBlocked)
	ok(t, stale.RemoveLabels(ctx, iss.Number, forge.LabelPriority))
	if got := val(repo.GetIssue(ctx, iss.Number)).must(t); got.HasLabel(forge.LabelPriority) {
		t.Fatalf("after remove: labels = %v, want no priority", got.Labels)
	}

	// A label deleted and not recreated is reported, not silently skipped.
	ls, _, err := sdk.ListRepoLabels(repo.Owner(), repo.Name(), giteasdk.ListLabelsOptions{ListOptions: giteasdk.ListOptions{PageSize: 50}})
	ok(t, err)
	for _, l := range ls {
		if l.Name == string(forge.LabelVision) {
			_, err = sdk.DeleteLabel(repo.Owner(), repo.Name(), l.ID)
			ok(t, err)
		}
	}
	wantErr(t, repo.AddLabels(ctx, iss.Number, forge.LabelVision), forge.ErrNotFound)
}

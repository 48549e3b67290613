package trackrecord_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/trackrecord"
)

// TestRecordOnGitea: on a real forge, the dev bot's pull requests at two
// levels; one merged and reverted on main, one merged whose issue is
// reopened, one merged alone, one closed unmerged; and the owner's merged
// pull request, which is no role's. The record counts each under its
// level and names the reverted and the reopened.
func TestRecordOnGitea(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a forge")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	srv := forgetest.Start(t)
	p := srv.NewProject(t, "track")
	dev := p.Dev.Client.Repo(p.Repo.Owner(), p.Repo.Name())

	open := func(as *forge.RepoClient, k int, level string) (forge.PullRequest, forge.Issue) {
		t.Helper()
		is, err := p.Repo.CreateIssue(ctx, forge.NewIssue{Title: fmt.Sprintf("issue %d", k)})
		if err != nil {
			t.Fatal(err)
		}
		branch := fmt.Sprintf("fix/issue-%d", is.Number)
		if _, err := as.CreateBranch(ctx, branch, "main"); err != nil {
			t.Fatal(err)
		}
		if _, err := as.PutFile(ctx, forge.FileChange{Path: fmt.Sprintf("f%d.txt", k), Content: []byte("x\n"), Branch: branch, Message: fmt.Sprintf("change %d", k)}); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("Fixes #%d\n\n%s\n", is.Number, forge.RefMarker(forge.RefDisintoIssue, fmt.Sprint(is.Number)))
		if level != "" {
			m, _ := forge.Marker{Kind: forge.MarkerAutonomy, Fields: map[string]string{"level": level}}.String()
			body += m + "\n"
		}
		pr, err := as.CreatePull(ctx, forge.NewPull{Title: fmt.Sprintf("fix: issue %d", k), Body: body, Head: branch, Base: "main"})
		if err != nil {
			t.Fatal(err)
		}
		return pr, is
	}
	merge := func(pr forge.PullRequest) forge.PullRequest {
		t.Helper()
		if err := p.Repo.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: pr.HeadSHA}); err != nil {
			t.Fatal(err)
		}
		got, err := p.Repo.GetPull(ctx, pr.Number)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Merged || got.MergedSHA == "" || got.MergedAt.IsZero() {
			t.Fatalf("merged pull request #%d: %+v", pr.Number, got)
		}
		return got
	}

	// Every pull request opens first, so that the forge checks them all
	// before the merges: merging one at a time as each opens waits for
	// each check in turn.
	reverted, _ := open(dev, 1, "auto")
	reopened, issue := open(dev, 2, "auto")
	fine, _ := open(dev, 3, "approve")
	closed, _ := open(dev, 4, "auto")
	owners, _ := open(p.Repo, 5, "auto")
	old, _ := open(dev, 6, "")
	reverted = merge(reverted)
	for _, pr := range []forge.PullRequest{reopened, fine, owners, old} {
		merge(pr)
	}
	if err := dev.ClosePull(ctx, closed.Number); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Repo.PutFile(ctx, forge.FileChange{Path: "revert.txt", Content: []byte("r\n"), Branch: "main",
		Message: fmt.Sprintf("Revert \"fix: issue 1\"\n\nThis reverts commit %s, reversing\nchanges made to somewhere.\n", reverted.MergedSHA)}); err != nil {
		t.Fatal(err)
	}
	if err := p.Repo.CloseIssue(ctx, issue.Number); err != nil {
		t.Fatal(err)
	}
	st := forge.StateOpen
	if _, err := p.Repo.EditIssue(ctx, issue.Number, forge.IssueEdit{State: &st}); err != nil {
		t.Fatal(err)
	}

	tr := trackrecord.New(trackrecord.Options{Project: "track", Forge: dev, Primary: "main", Roles: map[string]string{p.Dev.Login: "dev"}})
	rec, err := tr.Compute(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := []trackrecord.Row{
		{Role: "dev", Merged: 1},
		{Role: "dev", Level: "approve", Merged: 1},
		{Role: "dev", Level: "auto", Merged: 2, Reverted: 1, Reopened: 1, ClosedUnmerged: 1},
	}
	if !reflect.DeepEqual(rec.Rows, want) {
		t.Errorf("rows:\n%+v\nwant:\n%+v", rec.Rows, want)
	}
	if !reflect.DeepEqual(rec.Reverted, []int64{reverted.Number}) || !reflect.DeepEqual(rec.Reopened, []int64{reopened.Number}) {
		t.Errorf("reverted %v, reopened %v; want [%d] and [%d]", rec.Reverted, rec.Reopened, reverted.Number, reopened.Number)
	}
}

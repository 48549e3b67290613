package forgefake_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgefake"
)

func TestClaimIsExclusive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := forgefake.New(nil)
	a, b := f.Repo("o", "r", "dev-bot"), f.Repo("o", "r", "dev-qwen")
	if _, err := a.EnsureLabels(ctx); err != nil {
		t.Fatal(err)
	}
	iss, err := a.CreateIssue(ctx, forge.NewIssue{Title: "x", Labels: []forge.LabelName{forge.LabelBacklog}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for _, r := range []*forgefake.Repo{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Claim(ctx, iss.Number, nil); err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errors.Is(err, forge.ErrClaimed) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d winners, want 1", wins)
	}
}

func TestFailNextAndCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := forgefake.New(nil)
	r := f.Repo("o", "r", "dev-bot")
	f.FailNext("ListIssues", forge.ErrUnavailable)
	if _, err := r.ListIssues(ctx, forge.IssueQuery{}); !errors.Is(err, forge.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if _, err := r.ListIssues(ctx, forge.IssueQuery{}); err != nil {
		t.Fatalf("second call: %v", err)
	}
	if got := f.Calls()["ListIssues"]; got != 2 {
		t.Fatalf("calls = %d", got)
	}
}

func TestPushMakesReviewsStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := forgefake.New(nil)
	dev, rev := f.Repo("o", "r", "dev-bot"), f.Repo("o", "r", "review-bot")
	if _, err := dev.CreateBranch(ctx, "fix/issue-1", "main"); err != nil {
		t.Fatal(err)
	}
	head := dev.Push("fix/issue-1")
	pr, err := dev.CreatePull(ctx, forge.NewPull{Title: "t", Head: "fix/issue-1", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rev.CreateReview(ctx, pr.Number, forge.NewReview{Event: forge.ReviewApprove, CommitID: head}); err != nil {
		t.Fatal(err)
	}
	dev.Push("fix/issue-1")
	rs, err := rev.ListReviews(ctx, pr.Number)
	if err != nil || len(rs) != 1 || !rs[0].Stale {
		t.Fatalf("reviews = %+v, %v", rs, err)
	}
}

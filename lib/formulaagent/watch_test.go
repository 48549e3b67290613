package formulaagent

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// fakeForge serves a branch head and issues, filtered by Since as the
// forge does (updated at or after), counting requests.
type fakeForge struct {
	head     string
	issues   []forge.Issue
	requests int
}

func (f *fakeForge) GetBranch(context.Context, string) (forge.Branch, error) {
	f.requests++
	return forge.Branch{Name: "main", SHA: f.head}, nil
}

func (f *fakeForge) ListIssues(_ context.Context, q forge.IssueQuery) ([]forge.Issue, error) {
	f.requests++
	var out []forge.Issue
	for _, i := range f.issues {
		if q.Since.IsZero() || !i.Updated.Before(q.Since) {
			out = append(out, i)
		}
	}
	return out, nil
}

// TestWatch: a first run, a moved head, a later update, a second update
// within the watermark's second and a due timer each count as a change;
// nothing else does, for two requests.
func TestWatch(t *testing.T) {
	t0 := time.Date(2026, 4, 15, 8, 0, 0, 0, time.UTC)
	f := &fakeForge{head: "a", issues: []forge.Issue{{Number: 1, Title: "x", Updated: t0}}}
	w := Watch{Forge: f, Primary: "main", File: filepath.Join(t.TempDir(), "watch.json")}
	ctx := context.Background()
	step := func(want string, timer time.Time) {
		t.Helper()
		f.requests = 0
		obs, err := w.Changed(ctx, t0)
		if err != nil {
			t.Fatal(err)
		}
		if obs.Why != want {
			t.Fatalf("why %q, want %q", obs.Why, want)
		}
		if f.requests != 2 {
			t.Errorf("%d requests", f.requests)
		}
		if err := w.Save(obs, timer); err != nil {
			t.Fatal(err)
		}
	}
	step("first run", time.Time{})
	step("", time.Time{})
	f.head = "b"
	step("primary branch moved", time.Time{})
	f.issues[0].Title = "y" // the same second: told apart by content
	step("issues updated", time.Time{})
	step("", time.Time{})
	f.issues = append(f.issues, forge.Issue{Number: 2, Updated: t0.Add(time.Second)})
	step("issues updated", t0)
	step("timer due", t0.Add(time.Hour))
	step("", time.Time{})
}

// TestLock: a second holder of a role's lock on a project is refused.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	unlock, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); !errors.Is(err, ErrBusy) {
		t.Fatalf("second lock: %v", err)
	}
	unlock()
	again, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	again()
}

// TestBranch names the run's branch by UTC minute.
func TestBranch(t *testing.T) {
	if got := Branch("gardener", time.Date(2026, 4, 15, 10, 7, 0, 0, time.FixedZone("x", 2*3600))); got != "chore/gardener-20260415-0807" {
		t.Fatal(got)
	}
}

package trackrecord

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// fakeForge serves fixed lists, filtered as the forge filters them.
type fakeForge struct {
	pulls   []forge.PullRequest
	commits []forge.Commit
	reopens map[int64][]time.Time
	reads   int
}

func (f *fakeForge) RecentPulls(_ context.Context, _ forge.State, since time.Time) ([]forge.PullRequest, error) {
	var out []forge.PullRequest
	for _, p := range f.pulls {
		if !p.Updated.Before(since) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakeForge) RecentCommits(_ context.Context, _ string, since time.Time) ([]forge.Commit, error) {
	var out []forge.Commit
	for _, c := range f.commits {
		if !c.Created.Before(since) {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeForge) Reopenings(_ context.Context, n int64) ([]time.Time, error) {
	f.reads++
	return f.reopens[n], nil
}

// TestWindows: a revert or a reopening counts within RevertWindow of the
// merge only; pull requests merged or closed before Window are left out,
// as are a fork's and one whose level marker was written by someone else;
// the answer for a merge older than RevertWindow is read once.
func TestWindows(t *testing.T) {
	now := time.Date(2026, 6, 30, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	ref := func(n string) string { return forge.RefMarker(forge.RefDisintoIssue, n) }
	auto := "<!-- disinto:autonomy level=auto -->"
	pr := func(n int64, merged time.Duration, body string) forge.PullRequest {
		at := now.Add(-merged)
		return forge.PullRequest{Number: n, Author: "dev-bot", Merged: true, MergedAt: at, ClosedAt: at, Updated: at,
			MergedSHA: "aaaaaaa" + string(rune('0'+n)) + "00000000000000000000000000000000", HeadSHA: "b", Body: body}
	}
	f := &fakeForge{
		pulls: []forge.PullRequest{
			pr(1, 20*day, ref("11")+auto), // reverted in time
			pr(2, 20*day, ref("12")+auto), // reverted too late
			pr(3, 20*day, ref("13")+auto), // reopened in time
			pr(4, 20*day, ref("14")+auto), // reopened too late
			pr(5, 40*day, ref("15")+auto), // before the window
			{Number: 6, Author: "dev-bot", ClosedAt: now.Add(-2 * day), Updated: now.Add(-2 * day), Body: auto},
			{Number: 7, Author: "dev-bot", ClosedAt: now.Add(-40 * day), Updated: now.Add(-2 * day), Body: auto},
			{Number: 8, Author: "dev-bot", FromFork: true, Merged: true, MergedAt: now.Add(-day), Updated: now.Add(-day)},
			{Number: 9, Author: "mallory", Merged: true, MergedAt: now.Add(-day), Updated: now.Add(-day), Body: auto},
		},
		commits: []forge.Commit{
			{Message: "Revert\n\nThis reverts commit aaaaaaa1.", Created: now.Add(-19 * day)},
			{Message: "Revert\n\nThis reverts commit aaaaaaa2000.", Created: now.Add(-12 * day)},
		},
		reopens: map[int64][]time.Time{13: {now.Add(-18 * day)}, 14: {now.Add(-10 * day)}},
	}
	tr := New(Options{Project: "p", Forge: f, Primary: "main", Roles: map[string]string{"Dev-Bot": "dev"}})
	rec, err := tr.Compute(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{{Role: "dev", Level: "auto", Merged: 4, Reverted: 1, Reopened: 1, ClosedUnmerged: 1}}
	if !reflect.DeepEqual(rec.Rows, want) || !reflect.DeepEqual(rec.Reverted, []int64{1}) || !reflect.DeepEqual(rec.Reopened, []int64{3}) {
		t.Fatalf("record %+v, want rows %+v, reverted [1], reopened [3]", rec, want)
	}
	reads := f.reads
	if _, err := tr.Compute(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	if f.reads != reads {
		t.Errorf("settled reopenings read again: %d reads, then %d", reads, f.reads)
	}
}

package gardener

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/text"
)

// errKilled stands in for the process dying at a cut point.
var errKilled = errors.New("killed at a cut point")

// applyFixture is one manifest over fresh issues: an enriching edit with
// its labels, a bundle issue that later actions refer to symbolically, a
// comment and a close, and a label the forge does not have (which fails
// alone, spec 30 §14.14).
type applyFixture struct {
	a, b, c, report forge.Issue
	merge           string
	m               Manifest
	newBody         string
}

func (r *rig) applyFixture(k int) applyFixture {
	r.T.Helper()
	f := applyFixture{merge: fmt.Sprintf("%040x", k+1)}
	f.a = r.Issue(fmt.Sprintf("tech debt %d", k), "Clean up lib/env.sh", forge.LabelTechDebt)
	f.b = r.Issue(fmt.Sprintf("dust %d", k), "typo")
	f.c = r.Issue(fmt.Sprintf("other %d", k), "something")
	f.report = r.Issue(fmt.Sprintf("stands in for the pull request %d", k), "")
	f.newBody = "Clean up lib/env.sh\n\n## Acceptance criteria\n\n- [ ] done\n\n## Affected files\n\n- `lib/env.sh`\n"
	f.m = Manifest{
		{Action: EditBody, Issue: f.a.Number, Body: f.newBody, BaseSHA256: BodyHash(f.a.Body)},
		{Action: AddLabel, Issue: f.a.Number, Label: "backlog"},
		{Action: RemoveLabel, Issue: f.a.Number, Label: "tech-debt"},
		{Action: CreateIssue, ID: "bundle-x", Title: "fix: bundled dust cleanup — x", Body: "bundle of #" + fmt.Sprint(f.b.Number), Labels: []string{"backlog"}},
		{Action: Comment, Issue: f.b.Number, Body: "Bundled into #{bundle-x}."},
		{Action: Close, Issue: f.b.Number, Reason: "bundled"},
		{Action: Comment, Issue: f.c.Number, Body: "hello"},
		{Action: AddLabel, Issue: f.c.Number, Label: "no-such-label"},
	}
	if err := f.m.Validate(); err != nil {
		r.T.Fatal(err)
	}
	return f
}

// markerCount counts the bot's comments on n carrying marker.
func (r *rig) markerCount(n int64, marker string) int {
	c := 0
	for _, cm := range r.Comments(n) {
		if strings.EqualFold(cm.Author, r.Bot.Login) && strings.Contains(cm.Body, marker) {
			c++
		}
	}
	return c
}

// check asserts every action of f took effect exactly once.
func (r *rig) checkApplied(f applyFixture) {
	t := r.T
	t.Helper()
	a := r.Get(f.a.Number)
	if strings.Count(a.Body, "## Acceptance criteria") != 1 || !strings.HasPrefix(a.Body, f.newBody) {
		t.Errorf("#%d body:\n%s", a.Number, a.Body)
	}
	if !hasLabel(a, "backlog") || hasLabel(a, "tech-debt") {
		t.Errorf("#%d labels %v: want backlog without tech-debt", a.Number, a.Labels)
	}
	all, err := r.Repo.ListIssues(ctxOf(t), forge.IssueQuery{State: forge.StateAll})
	if err != nil {
		t.Fatal(err)
	}
	var bundles []forge.Issue
	for _, i := range all {
		if strings.Contains(i.Body, actionMarker(Key(f.merge, 3))) {
			bundles = append(bundles, i)
		}
	}
	if len(bundles) != 1 || !hasLabel(bundles[0], "backlog") {
		t.Fatalf("bundle issues of %s: %+v", text.ShortSHA(f.merge), bundles)
	}
	if n := r.markerCount(f.b.Number, actionMarker(Key(f.merge, 4))); n != 1 {
		t.Errorf("#%d has %d bundle comments, want 1", f.b.Number, n)
	}
	for _, cm := range r.Comments(f.b.Number) {
		if strings.Contains(cm.Body, "Bundled into") && !strings.Contains(cm.Body, fmt.Sprintf("#%d.", bundles[0].Number)) {
			t.Errorf("the bundle comment does not name #%d: %q", bundles[0].Number, cm.Body)
		}
	}
	if r.Get(f.b.Number).State != forge.StateClosed {
		t.Errorf("#%d is not closed", f.b.Number)
	}
	if n := r.markerCount(f.c.Number, actionMarker(Key(f.merge, 6))); n != 1 {
		t.Errorf("#%d has %d comments, want 1", f.c.Number, n)
	}
	if n := r.markerCount(f.report.Number, forge.RefMarker(forge.RefGardenerManifest, f.merge)); n != 1 {
		t.Errorf("%d applied reports, want 1", n)
	}
}

// TestApplyConvergesAfterEveryCut: an application killed at each cut
// point, then run again by a restarted gardener (with its state, and
// once more with the state dir lost), applies every action exactly once;
// a failing action (an unknown label) fails alone; a third application
// of the same merge changes nothing (spec 30 §14.14–16).
func TestApplyConvergesAfterEveryCut(t *testing.T) {
	r := newRig(t, nil)
	me := r.Bot.Login
	// Count the cut points of one application.
	points := 0
	probe := r.applyFixture(1000)
	counting := r.a.applier(me)
	counting.hooks = Hooks{Cut: func(string, string) error { points++; return nil }}
	if _, err := counting.Apply(ctxOf(t), probe.report.Number, probe.merge, probe.m); err != nil {
		t.Fatal(err)
	}
	r.checkApplied(probe)
	if points < 6 {
		t.Fatalf("%d cut points", points)
	}
	for k := 0; k < points; k++ {
		for _, lose := range []bool{false, true} {
			if lose && k%3 != 0 {
				continue // the lost state dir at a third of the cuts
			}
			name := fmt.Sprintf("cut-%d-lose-%v", k, lose)
			t.Run(name, func(t *testing.T) {
				rr := *r
				rr.T = t
				f := rr.applyFixture(k*2 + map[bool]int{false: 0, true: 1}[lose])
				seen := 0
				ap := rr.a.applier(me)
				ap.hooks = Hooks{Cut: func(point, key string) error {
					if seen == k {
						seen++
						return errKilled
					}
					seen++
					return nil
				}}
				if _, err := ap.Apply(ctxOf(t), f.report.Number, f.merge, f.m); !errors.Is(err, errKilled) {
					t.Fatalf("the cut at %d did not stop the application: %v", k, err)
				}
				if lose {
					if err := os.RemoveAll(filepath.Join(rr.Data, "state", "applied")); err != nil {
						t.Fatal(err)
					}
				}
				rr.build()
				again := rr.a.applier(me)
				rec, err := again.Apply(ctxOf(t), f.report.Number, f.merge, f.m)
				if err != nil {
					t.Fatal(err)
				}
				if !lose && rec.Actions[Key(f.merge, 7)] != Failed {
					t.Errorf("the unknown label: %q", rec.Actions[Key(f.merge, 7)])
				}
				if _, err := again.Apply(ctxOf(t), f.report.Number, f.merge, f.m); err != nil {
					t.Fatal(err)
				}
				rr.checkApplied(f)
			})
		}
	}
}

// TestPlantedActionMarkerDoesNotBlockAnEdit: an author who copies the
// marker of an edit the gardener is about to make into their own issue's
// body does not make the edit count as done; on the gardener's own issue
// the marker is its record of the edit.
func TestPlantedActionMarkerDoesNotBlockAnEdit(t *testing.T) {
	r := newRig(t, nil)
	merge := fmt.Sprintf("%040x", 4242)
	planted := "Clean up lib/env.sh\n\n" + actionMarker(Key(merge, 0))
	i := r.Issue("tech debt planted", planted, forge.LabelTechDebt)
	newBody := "Clean up lib/env.sh\n\n## Acceptance criteria\n\n- [ ] done\n"
	m := Manifest{{Action: EditBody, Issue: i.Number, Body: newBody, BaseSHA256: BodyHash(planted)}}
	report := r.Issue("stands in for the pull request", "")
	rec, err := r.a.applier(r.Bot.Login).Apply(ctxOf(t), report.Number, merge, m)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Actions[Key(merge, 0)]; got != Applied {
		t.Fatalf("the edit of an issue whose author planted its marker: %s, want %s", got, Applied)
	}
	if got := r.Get(i.Number).Body; !strings.HasPrefix(got, newBody) {
		t.Fatalf("body after the edit:\n%s", got)
	}
}

package provenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgefake"
	"github.com/disinto/disinto/lib/provenance"
)

// world is a repository of "owner" with a write collaborator "carol", a
// bot "dev-bot" with write access, a reader "rita" and an outsider
// "mallory", each with a handle.
type world struct {
	fake                          *forgefake.Forge
	owner, carol, bot, rita, mall *forgefake.Repo
	judge                         *provenance.Judge
	now                           time.Time
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	w.fake = forgefake.New(func() time.Time { return w.now })
	w.owner = w.fake.Repo("owner", "proj", "owner")
	ctx := t.Context()
	if _, err := w.owner.EnsureLabels(ctx); err != nil {
		t.Fatal(err)
	}
	for login, p := range map[string]forge.Permission{"carol": forge.PermWrite, "dev-bot": forge.PermWrite, "rita": forge.PermRead} {
		if err := w.owner.AddCollaborator(ctx, login, p); err != nil {
			t.Fatal(err)
		}
	}
	w.carol, w.bot = w.fake.Repo("owner", "proj", "carol"), w.fake.Repo("owner", "proj", "dev-bot")
	w.rita, w.mall = w.fake.Repo("owner", "proj", "rita"), w.fake.Repo("owner", "proj", "mallory")
	w.judge = provenance.New(provenance.Options{Forge: w.bot, Bots: []string{"dev-bot", "gardener-bot"},
		Now: func() time.Time { return w.now }})
	return w
}

func (w *world) issue(t *testing.T, as *forgefake.Repo, body string, labels ...forge.LabelName) forge.Issue {
	t.Helper()
	i, err := as.CreateIssue(t.Context(), forge.NewIssue{Title: "t", Body: body, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func TestIssueOrigin(t *testing.T) {
	t.Parallel()
	out, in := provenance.Marker(provenance.Outsider, "pr-3"), provenance.Marker(provenance.Maintainer)
	for _, c := range []struct {
		name string
		as   func(w *world) *forgefake.Repo
		body string
		want provenance.Origin
	}{
		{"the owner", func(w *world) *forgefake.Repo { return w.owner }, "x", provenance.Maintainer},
		{"a write collaborator", func(w *world) *forgefake.Repo { return w.carol }, "x", provenance.Maintainer},
		{"a bot, unmarked", func(w *world) *forgefake.Repo { return w.bot }, "x", provenance.Maintainer},
		{"a bot, marked outsider", func(w *world) *forgefake.Repo { return w.bot }, "x\n" + out, provenance.Outsider},
		{"a bot, marked both ways", func(w *world) *forgefake.Repo { return w.bot }, in + "\n" + out + "\n" + in, provenance.Outsider},
		{"a bot, an unknown trust", func(w *world) *forgefake.Repo { return w.bot },
			"<!-- disinto:origin trust=admin -->", provenance.Outsider},
		{"a maintainer, lowered by an enrichment", func(w *world) *forgefake.Repo { return w.carol }, "x\n" + out, provenance.Outsider},
		{"a reader", func(w *world) *forgefake.Repo { return w.rita }, "x", provenance.Outsider},
		{"an outsider", func(w *world) *forgefake.Repo { return w.mall }, "x", provenance.Outsider},
		{"an outsider forging a maintainer marker", func(w *world) *forgefake.Repo { return w.mall }, in, provenance.Outsider},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			i := w.issue(t, c.as(w), c.body)
			got, err := w.judge.Issue(t.Context(), i)
			if err != nil || got != c.want {
				t.Fatalf("origin %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestPullOrigin(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		pr   func(w *world) forge.PullRequest
		want provenance.Origin
	}{
		{"from a fork, by a maintainer", func(w *world) forge.PullRequest {
			return forge.PullRequest{AuthorID: idOf(t, w.carol), FromFork: true}
		}, provenance.Outsider},
		{"a maintainer's branch", func(w *world) forge.PullRequest { return forge.PullRequest{AuthorID: idOf(t, w.carol)} }, provenance.Maintainer},
		{"the dev bot's, for an outsider's issue", func(w *world) forge.PullRequest {
			return forge.PullRequest{AuthorID: idOf(t, w.bot), Body: "Fixes #1\n" + provenance.Marker(provenance.Outsider, "issue-1")}
		}, provenance.Outsider},
		{"no known author", func(w *world) forge.PullRequest { return forge.PullRequest{} }, provenance.Outsider},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			got, err := w.judge.Pull(t.Context(), c.pr(w))
			if err != nil || got != c.want {
				t.Fatalf("origin %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func idOf(t *testing.T, r *forgefake.Repo) int64 {
	t.Helper()
	u, err := r.Me(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}

// TestLastApplied: only the latest application of the label counts, and
// only a writer who is not a bot makes it a maintainer's word.
func TestLastApplied(t *testing.T) {
	t.Parallel()
	type step struct {
		as  func(w *world) *forgefake.Repo
		add bool
	}
	owner := func(w *world) *forgefake.Repo { return w.owner }
	bot := func(w *world) *forgefake.Repo { return w.bot }
	rita := func(w *world) *forgefake.Repo { return w.rita }
	for _, c := range []struct {
		name  string
		steps []step
		by    string
		maint bool
	}{
		{"never applied", nil, "", false},
		{"by a bot", []step{{bot, true}}, "dev-bot", false},
		{"by a maintainer", []step{{owner, true}}, "owner", true},
		{"by a reader", []step{{rita, true}}, "rita", false},
		{"by a maintainer, then a bot again", []step{{owner, true}, {bot, false}, {bot, true}}, "dev-bot", false},
		{"by a bot, then a maintainer again", []step{{bot, true}, {owner, false}, {owner, true}}, "owner", true},
		{"by a maintainer, removed since", []step{{owner, true}, {bot, false}}, "owner", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			ctx := t.Context()
			i := w.issue(t, w.mall, "please")
			for _, s := range c.steps {
				var err error
				if s.add {
					err = s.as(w).AddLabels(ctx, i.Number, forge.LabelBacklog)
				} else {
					err = s.as(w).RemoveLabels(ctx, i.Number, forge.LabelBacklog)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			got, err := w.judge.LastApplied(ctx, i.Number, forge.LabelBacklog)
			if err != nil || got.By.Login != c.by || got.Maintainer != c.maint {
				t.Fatalf("last applied %+v, %v; want by %q, maintainer %v", got, err, c.by, c.maint)
			}
		})
	}
}

// TestWritersAreCached: the writers are listed once per TTL, so a
// revoked maintainer stops counting within it and no sooner is asked
// again.
func TestWritersAreCached(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	carol := forge.User{ID: idOf(t, w.carol), Login: "carol"}
	for range 3 {
		if ok, err := w.judge.IsMaintainer(ctx, carol); err != nil || !ok {
			t.Fatalf("carol is no maintainer: %v", err)
		}
	}
	if n := w.fake.Calls()["Writers"]; n != 1 {
		t.Fatalf("%d listings of the writers, want 1", n)
	}
	if err := w.owner.AddCollaborator(ctx, "carol", forge.PermRead); err != nil {
		t.Fatal(err)
	}
	w.now = w.now.Add(provenance.DefaultTTL)
	if ok, err := w.judge.IsMaintainer(ctx, carol); err != nil || ok {
		t.Fatalf("carol is still a maintainer after her access was revoked: %v", err)
	}
}

func TestLeastAndMarkers(t *testing.T) {
	t.Parallel()
	if provenance.Least() != provenance.Maintainer || provenance.Least(provenance.Maintainer, "") != provenance.Outsider {
		t.Fatal("least of nothing is a maintainer's, of an unknown an outsider's")
	}
	if _, ok := provenance.FromMarkers("no marker"); ok {
		t.Fatal("a marker found in a body without one")
	}
	o, ok := provenance.FromMarkers(provenance.Marker(provenance.Maintainer, "issue-1", "pr-2"))
	if !ok || o != provenance.Maintainer {
		t.Fatalf("origin %q, %v", o, ok)
	}
	if m := provenance.Marker("bogus"); m != provenance.Marker(provenance.Outsider) {
		t.Fatalf("a marker of an unknown origin is %q, want an outsider's", m)
	}
}

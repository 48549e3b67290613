package dev

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/provenance"
)

// withGardener makes gardener-bot one of the factory's bots.
func withGardener(o *Options) { o.BotUsernames = append(o.BotUsernames, "gardener-bot") }

// originWaits counts the agent's comments on n that say it waits for a
// maintainer.
func originWaits(h *harness, n int64) int {
	count := 0
	for _, c := range h.f.commentsOf(n) {
		if _, ok := forge.FindMarker(c.Body, forge.MarkerOriginWait); ok && c.Author == bot {
			count++
		}
	}
	return count
}

// TestOutsiderIssueWaitsForAMaintainer: an outsider's issue the gardener
// put in the backlog is not claimed and says so once; an unchanged issue
// costs no timeline read; once the owner applies backlog themselves it is
// claimed, worked, and its state records the outsider origin.
func TestOutsiderIssueWaitsForAMaintainer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, pushing, withGardener)
	ctx := t.Context()
	if err := h.f.owner.AddCollaborator(ctx, "gardener-bot", forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	outsider, gardener := h.f.fake.Repo("owner", "proj", "mallory"), h.f.fake.Repo("owner", "proj", "gardener-bot")
	i, err := outsider.CreateIssue(ctx, forge.NewIssue{Title: "Add a flag", Body: "## Acceptance criteria\n- [ ] a flag\n"})
	if err != nil {
		t.Fatal(err)
	}
	if err := gardener.AddLabels(ctx, i.Number, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	for k := range 3 {
		h.tick()
		h.advanceClock(2 * time.Minute)
		if got := h.f.issue(i.Number); len(got.Assignees) > 0 || got.HasLabel(forge.LabelInProgress) {
			t.Fatalf("tick %d: the outsider's issue was claimed on the gardener's word: %+v", k, got)
		}
	}
	if _, ok := h.state(i.Number); ok || len(h.r.Calls()) != 0 {
		t.Fatalf("the outsider's issue was worked (%d sessions)", len(h.r.Calls()))
	}
	if n := originWaits(h, i.Number); n != 1 {
		t.Fatalf("%d comments say the issue waits for a maintainer, want 1", n)
	}
	h.wantComment(i.Number, "`gardener-bot`, not a maintainer")
	if !waitsInReport(h, i.Number) {
		t.Errorf("status does not list #%d as waiting for a maintainer: %+v", i.Number, h.a.Report().Items)
	}
	reads := h.f.fake.Calls()["LabelEvents"]
	h.tick()
	if got := h.f.fake.Calls()["LabelEvents"]; got != reads {
		t.Errorf("an unchanged waiting issue's timeline was read again (%d reads, then %d)", reads, got)
	}

	if err := h.f.owner.RemoveLabels(ctx, i.Number, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	if err := h.f.owner.AddLabels(ctx, i.Number, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	h.tick()
	st := h.wantStage(i.Number, StageAwaitingCI)
	if st.Origin != provenance.Outsider {
		t.Fatalf("origin %q recorded, want %q", st.Origin, provenance.Outsider)
	}
	if n := originWaits(h, i.Number); n != 1 {
		t.Fatalf("%d comments say the issue waits for a maintainer, want still 1", n)
	}
	pr := h.f.pull(st.PR)
	if o, ok := provenance.FromMarkers(pr.Body); !ok || o != provenance.Outsider {
		t.Fatalf("the pull request does not carry the issue's outsider origin: %q", pr.Body)
	}
	if waitsInReport(h, i.Number) {
		t.Errorf("status still lists the claimed #%d as waiting for a maintainer", i.Number)
	}
}

// waitsInReport reports whether status lists n as waiting for a
// maintainer's backlog.
func waitsInReport(h *harness, n int64) bool {
	for _, it := range h.a.Report().Items {
		if it.Issue == n && strings.Contains(it.Stage, "maintainer") {
			return true
		}
	}
	return false
}

// TestDerivedOutsiderIssueWaits: an issue a bot filed from an outsider's
// text (its origin marker says so) waits for a maintainer like the
// outsider's own; a forged maintainer marker beside it changes nothing.
func TestDerivedOutsiderIssueWaits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, pushing, withGardener)
	ctx := t.Context()
	for _, l := range []string{"review-bot", "gardener-bot"} {
		if err := h.f.owner.AddCollaborator(ctx, l, forge.PermWrite); err != nil {
			t.Fatal(err)
		}
	}
	reviewer, gardener := h.f.fake.Repo("owner", "proj", "review-bot"), h.f.fake.Repo("owner", "proj", "gardener-bot")
	body := "Flagged as pre-existing.\n" + provenance.Marker(provenance.Maintainer) + "\n" + provenance.Marker(provenance.Outsider, "pr-3")
	i, err := reviewer.CreateIssue(ctx, forge.NewIssue{Title: "Tech debt", Body: body, Labels: []forge.LabelName{forge.LabelTechDebt}})
	if err != nil {
		t.Fatal(err)
	}
	if err := gardener.AddLabels(ctx, i.Number, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if got := h.f.issue(i.Number); len(got.Assignees) > 0 || len(h.r.Calls()) != 0 {
		t.Fatalf("a finding from an outsider's pull request was claimed on the gardener's word: %+v", got)
	}
	if err := h.f.owner.AddLabels(ctx, i.Number, forge.LabelPriority); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if _, ok := h.state(i.Number); ok {
		t.Fatal("a maintainer's other label let the finding be claimed")
	}
	if err := h.f.owner.RemoveLabels(ctx, i.Number, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	if err := h.f.owner.AddLabels(ctx, i.Number, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if st := h.wantStage(i.Number, StageAwaitingCI); st.Origin != provenance.Outsider {
		t.Fatalf("origin %q recorded, want %q", st.Origin, provenance.Outsider)
	}
}

// TestMaintainerIssueOrigin: a maintainer's issue is claimed at once,
// without a timeline read, and its pull request says it is a
// maintainer's.
func TestMaintainerIssueOrigin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, pushing)
	n := h.f.addIssue("Add a flag", "## Acceptance criteria\n- [ ] a flag\n", forge.LabelBacklog)
	h.tick()
	st := h.wantStage(n, StageAwaitingCI)
	if st.Origin != provenance.Maintainer {
		t.Fatalf("origin %q recorded, want %q", st.Origin, provenance.Maintainer)
	}
	if got := h.f.fake.Calls()["LabelEvents"]; got != 0 {
		t.Errorf("%d timeline reads for a maintainer's issue, want 0", got)
	}
	if body := h.f.pull(st.PR).Body; !strings.Contains(body, provenance.Marker(provenance.Maintainer, fmt.Sprintf("issue-%d", n))) {
		t.Fatalf("pull request body without the origin marker: %q", body)
	}
}

// TestOriginWaitForgottenOutOfBacklog: an issue taken out of the backlog
// while it waits is no longer listed as waiting.
func TestOriginWaitForgottenOutOfBacklog(t *testing.T) {
	t.Parallel()
	h := newHarness(t, pushing, withGardener)
	ctx := t.Context()
	if err := h.f.owner.AddCollaborator(ctx, "gardener-bot", forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	gardener := h.f.fake.Repo("owner", "proj", "gardener-bot")
	i, err := h.f.fake.Repo("owner", "proj", "mallory").CreateIssue(ctx, forge.NewIssue{Title: "Add a flag", Body: "Please."})
	if err != nil {
		t.Fatal(err)
	}
	if err := gardener.AddLabels(ctx, i.Number, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if !waitsInReport(h, i.Number) {
		t.Fatal("the held issue is not listed as waiting")
	}
	if err := gardener.RemoveLabels(ctx, i.Number, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	h.tick()
	if waitsInReport(h, i.Number) {
		t.Fatal("an issue out of the backlog is still listed as waiting")
	}
}

// TestRetriedOutsiderIssueIsClaimed: the dev bot's own application of
// backlog counts as a maintainer's only right after its retried comment,
// which the dashboard posts when a maintainer ticks the issue's box: a
// re-application with no such comment, with one too old, or with one
// posted by someone else, still waits.
func TestRetriedOutsiderIssueIsClaimed(t *testing.T) {
	t.Parallel()
	retried := func(n int64) string {
		m, err := forge.Marker{Kind: forge.MarkerRetried, Fields: map[string]string{"issue": fmt.Sprint(n)}}.String()
		if err != nil {
			t.Fatal(err)
		}
		return "Retried from the factory dashboard: back in the backlog.\n" + m
	}
	for _, tc := range []struct {
		name    string
		comment string        // who posts the retried comment; none when empty
		before  time.Duration // how long before the label it is posted
		claimed bool
	}{
		{name: "retried", comment: bot, before: 10 * time.Second, claimed: true},
		{name: "no comment"},
		{name: "stale comment", comment: bot, before: 2 * time.Minute},
		{name: "forged comment", comment: "mallory", before: 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, pushing)
			ctx := t.Context()
			outsider, dev := h.f.fake.Repo("owner", "proj", "mallory"), h.f.fake.Repo("owner", "proj", bot)
			i, err := outsider.CreateIssue(ctx, forge.NewIssue{Title: "Add a flag", Body: "## Acceptance criteria\n- [ ] a flag\n"})
			if err != nil {
				t.Fatal(err)
			}
			if err := dev.AddLabels(ctx, i.Number, forge.LabelBlocked); err != nil {
				t.Fatal(err)
			}
			if tc.comment != "" {
				if _, err := h.f.fake.Repo("owner", "proj", tc.comment).CreateComment(ctx, i.Number, retried(i.Number)); err != nil {
					t.Fatal(err)
				}
			}
			h.advanceClock(tc.before)
			if err := dev.RemoveLabels(ctx, i.Number, forge.LabelBlocked); err != nil {
				t.Fatal(err)
			}
			if err := dev.AddLabels(ctx, i.Number, forge.LabelBacklog); err != nil {
				t.Fatal(err)
			}
			h.tick()
			st, worked := h.state(i.Number)
			if worked != tc.claimed {
				t.Fatalf("worked = %v, want %v (%+v)", worked, tc.claimed, st)
			}
			if !tc.claimed {
				if n := originWaits(h, i.Number); n != 1 {
					t.Fatalf("%d comments say the issue waits for a maintainer, want 1", n)
				}
				return
			}
			if st.Origin != provenance.Outsider {
				t.Fatalf("origin %q recorded, want %q", st.Origin, provenance.Outsider)
			}
		})
	}
}

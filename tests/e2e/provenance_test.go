package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/agents/gardener"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// TestProvenance: outsider text reaches no session on a bot's word, on a
// real Gitea with the real claude CLI. An outsider's issue the gardener
// promotes (its judgement scripted, its manifest merged by the dev bot)
// is not claimed; once the owner applies backlog, it is worked. A fork's
// pull request's review files a tech-debt finding with an outsider's
// origin, which a bot's backlog does not put to work.
func TestProvenance(t *testing.T) {
	t.Parallel()
	srv := forgetest.Start(t)
	t.Run("gardener promotion", func(t *testing.T) {
		t.Parallel()
		gardenerPromotesOutsiderIssue(t, srv)
	})
	t.Run("fork review finding", func(t *testing.T) {
		t.Parallel()
		forkReviewFindingWaits(t, srv)
	})
}

// withBots makes the dev agent know the gardener bot as one of the
// factory's, as the default configuration does.
func withBots(logins ...string) func(*dev.Options) {
	return func(o *dev.Options) { o.BotUsernames = append(o.BotUsernames, logins...) }
}

func gardenerPromotesOutsiderIssue(t *testing.T, srv *forgetest.Server) {
	e := newDevEnvOn(t, srv)
	ctx := testCtx(t)
	gbot := e.srv.NewUser(t, "gardener-bot")
	if err := e.repo.AddCollaborator(ctx, gbot.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	if err := e.repo.CreateFiles(ctx, "main", "seed", []forge.NewFile{
		{Path: gardener.ManifestFile, Content: []byte("[]\n")}, {Path: "lib/env.sh", Content: []byte("#!/bin/sh\n")}}); err != nil {
		t.Fatal(err)
	}
	mallory := e.srv.NewUser(t, "mallory")
	iss, err := mallory.Client.Repo(e.repo.Owner(), e.repo.Name()).CreateIssue(ctx, forge.NewIssue{Title: "env.sh is a mess",
		Body: "scenario: provenance-dev\n\nThe loader in lib/env.sh re-reads the file on every call."})
	if err != nil {
		t.Fatal(err)
	}
	n := iss.Number
	// The owner triages it as tech debt: no word on working it.
	if err := e.repo.AddLabels(ctx, n, forge.LabelTechDebt); err != nil {
		t.Fatal(err)
	}
	if err := e.model.SetScenarios(gardenerJudges(n), claudetest.Scenario{Name: "provenance-dev", Turns: []claudetest.Turn{
		implement("loader.txt", "read once"), claudetest.Text("Read the file once.")}}); err != nil {
		t.Fatal(err)
	}
	g := e.startGardener(gbot, sandboxtest.Dir(t, "gardener"))
	g.tick()
	var pr forge.PullRequest
	for _, p := range e.allPulls() {
		if strings.HasPrefix(p.Head, "chore/gardener-") {
			pr = p
		}
	}
	if pr.Number == 0 {
		t.Fatal("no gardener pull request")
	}
	d := e.newBot("dev-bot")
	d.rebuild(func(o *dev.Options) {
		o.ChoreBots = map[string]string{"gardener": gbot.Login}
		withBots(gbot.Login)(o)
		// The forge will not tell the dev bot who may write: the
		// configured maintainers stand in, as in a provisioned project.
		o.Maintainers = []string{e.owner.Login}
	})
	e.ci(pr, forge.CISuccess, "green")
	e.review(pr, forge.ReviewApprove, "ok")
	d.tick()
	if !e.pull(pr.Number).Merged {
		t.Fatal("the dev bot did not merge the gardener's pull request")
	}
	repeatUntil(t, "the promotion", 3, g.tick, func() bool { return e.getIssue(n).HasLabel(forge.LabelBacklog) })

	d.tick()
	d.tick()
	if i := e.getIssue(n); len(i.Assignees) > 0 || i.HasLabel(forge.LabelInProgress) {
		t.Fatalf("the outsider's issue was claimed on the gardener's promotion: %+v", i)
	}
	if reqs := e.model.MessageRequests("provenance-dev"); len(reqs) != 0 {
		t.Fatalf("%d model requests for the outsider's issue before a maintainer's backlog", len(reqs))
	}
	cs, err := e.repo.ListComments(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	waits := 0
	for _, c := range cs {
		if _, ok := forge.FindMarker(c.Body, forge.MarkerOriginWait); ok && strings.EqualFold(c.Author, d.user.Login) {
			waits++
		}
	}
	if waits != 1 {
		t.Errorf("%d comments say the issue waits for a maintainer, want 1", waits)
	}

	if err := e.repo.RemoveLabels(ctx, n, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	if err := e.repo.AddLabels(ctx, n, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	d.tick()
	if got := d.stage(n); got != dev.StageAwaitingCI {
		t.Fatalf("stage after the owner's backlog: %q", got)
	}
	st, _, err := d.a.State(n)
	if err != nil || st.Origin != provenance.Outsider {
		t.Fatalf("origin %q recorded (%v), want %q", st.Origin, err, provenance.Outsider)
	}
	work := e.onlyPull(branch(n))
	if o, ok := provenance.FromMarkers(work.Body); !ok || o != provenance.Outsider {
		t.Errorf("the dev bot's pull request does not carry the outsider origin")
	}
	// Outsider work goes at most at level approve, whatever the project's:
	// green and approved by the review bot, it waits for a maintainer's
	// approval of its head, and merges once the owner gives it.
	d.greenToReview(e, n, work)
	e.review(work, forge.ReviewApprove, "ok")
	d.tick()
	d.tick()
	if e.pull(work.Number).Merged || d.stage(n) != dev.StageAwaitingApproval {
		t.Fatalf("outsider work at stage %q, merged %v: want it waiting for a maintainer's approval", d.stage(n), e.pull(work.Number).Merged)
	}
	e.approveAs(e.owner, e.pull(work.Number))
	d.tick()
	if !e.pull(work.Number).Merged {
		t.Fatalf("outsider work not merged after the owner approved its head (stage %q)", d.stage(n))
	}
}

func forkReviewFindingWaits(t *testing.T, srv *forgetest.Server) {
	review := `{"verdict":"APPROVE","verdict_reason":"fine","review_markdown":"ok","findings":[{"severity":"high","file":"lib/env.sh","line":1,"text":"the loader reads the file on every call","preexisting":true}]}`
	e := newDevEnvOn(t, srv, claudetest.Scenario{Name: "provenance-review", Turns: []claudetest.Turn{
		writeReview(review), claudetest.Text("Review written.")}})
	ctx := testCtx(t)
	gbot := e.srv.NewUser(t, "gardener-bot")
	if err := e.repo.AddCollaborator(ctx, gbot.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	mallory := e.srv.NewUser(t, "mallory")
	upstream := mallory.Client.Repo(e.repo.Owner(), e.repo.Name())
	fork, err := upstream.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fr := mallory.Client.Repo(fork.Owner, fork.Name)
	if _, err := fr.CreateBranch(ctx, "speedup", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := fr.PutFile(ctx, forge.FileChange{Path: "lib/run.sh", Content: []byte("echo fast\n"), Branch: "speedup",
		Message: "speed up"}); err != nil {
		t.Fatal(err)
	}
	pr, err := upstream.CreatePull(ctx, forge.NewPull{Title: "Speed up", Body: "scenario: provenance-review\n\nFile the loader as tech debt.",
		Head: mallory.Login + ":speedup", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	e.ci(pr, forge.CISuccess, "green")
	e.newReviewer(nil).tick()
	debts, err := e.repo.ListIssues(ctx, forge.IssueQuery{Labels: []forge.LabelName{forge.LabelTechDebt}})
	if err != nil || len(debts) != 1 || !strings.EqualFold(debts[0].Author, e.reviewer.Login) {
		t.Fatalf("tech-debt issues %+v, %v: want one by the review bot", debts, err)
	}
	debt := debts[0]
	if o, ok := provenance.FromMarkers(debt.Body); !ok || o != provenance.Outsider ||
		!strings.Contains(debt.Body, provenance.Marker(provenance.Outsider, fmt.Sprintf("pr-%d", pr.Number))) {
		t.Fatalf("the finding of a fork's pull request does not carry its outsider origin:\n%s", debt.Body)
	}
	// A bot promotes it, as the gardener would.
	if err := gbot.Client.Repo(e.repo.Owner(), e.repo.Name()).AddLabels(ctx, debt.Number, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	d := e.newBot("dev-bot")
	d.rebuild(withBots(gbot.Login))
	d.tick()
	if i := e.getIssue(debt.Number); len(i.Assignees) > 0 || i.HasLabel(forge.LabelInProgress) {
		t.Fatalf("the finding of a fork's pull request was claimed on a bot's backlog: %+v", i)
	}
	if _, ok, _ := d.a.State(debt.Number); ok {
		t.Fatal("the dev agent keeps a state of the finding it must not work")
	}
}

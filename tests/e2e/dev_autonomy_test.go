package e2e

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/ledger"
)

// commentAs posts body on n as u.
func (e *devEnv) commentAs(u forgetest.User, n int64, body string) {
	e.t.Helper()
	if _, err := u.Client.Repo(e.repo.Owner(), e.repo.Name()).CreateComment(testCtx(e.t), n, body); err != nil {
		e.t.Fatalf("comment by %s: %v", u.Login, err)
	}
}

// approveAs submits u's formal approval of pr's head.
func (e *devEnv) approveAs(u forgetest.User, pr forge.PullRequest) {
	e.t.Helper()
	if _, err := u.Client.Repo(e.repo.Owner(), e.repo.Name()).CreateReview(testCtx(e.t), pr.Number,
		forge.NewReview{Event: forge.ReviewApprove, Body: "approved", CommitID: pr.HeadSHA}); err != nil {
		e.t.Fatalf("approval by %s: %v", u.Login, err)
	}
}

// waitNote returns the dev bot's note of kind on n ("" when none).
func (e *devEnv) waitNote(b *devBot, n int64, kind string) string {
	e.t.Helper()
	cs, err := e.repo.ListComments(testCtx(e.t), n)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, c := range cs {
		if strings.EqualFold(c.Author, b.user.Login) && strings.Contains(c.Body, "kind="+kind+" -->") {
			return c.Body
		}
	}
	return ""
}

// levelBot runs a maintainer's backlog issue through the dev agent at
// level until its pull request is green and approved by the review bot.
func levelBot(t *testing.T, srv *forgetest.Server, level config.AutonomyLevel) (*devEnv, *devBot, int64, forge.PullRequest) {
	t.Helper()
	e := newDevEnvOn(t, srv, claudetest.Scenario{Name: "dev-level", Turns: []claudetest.Turn{
		implement("widget.txt", "a widget"),
		claudetest.Text("Added widget.txt."),
	}})
	b := e.newBot("dev-bot")
	// The dev bot may write, so the forge will not tell it who else may:
	// the configured maintainers stand in, as in a provisioned project.
	b.rebuild(func(o *dev.Options) {
		o.Autonomy.Level, o.Maintainers = level, []string{e.owner.Login}
		o.BotUsernames = []string{e.reviewer.Login}
	})
	n := e.issue("Add a widget", "scenario: dev-level\n\nAdd widget.txt.", forge.LabelBacklog)
	b.tick()
	pr := e.onlyPull(branch(n))
	b.greenToReview(e, n, pr)
	e.review(pr, forge.ReviewApprove, "ok")
	b.tick()
	return e, b, n, e.pull(pr.Number)
}

// TestDevAutonomyLevels: on a maintainer's issue, level auto merges once
// CI is green and the review bot approved; approve merges only once a
// maintainer also approved the head (an outsider's, a bot's or an
// abbreviated approval does not count); advisory opens the pull request
// and never merges it, and finishes the issue once a maintainer merged it.
func TestDevAutonomyLevels(t *testing.T) {
	t.Parallel()
	srv := forgetest.Start(t) // one server, a repository per level
	t.Run("auto", func(t *testing.T) {
		t.Parallel()
		e, b, n, pr := levelBot(t, srv, config.AutonomyAuto)
		if !pr.Merged || e.getIssue(n).State != forge.StateClosed {
			t.Fatalf("not merged at level auto: %+v", pr)
		}
		if note := e.waitNote(b, pr.Number, "merge"); note != "" {
			t.Fatalf("a waiting note at level auto:\n%s", note)
		}
	})
	t.Run("approve", func(t *testing.T) {
		t.Parallel()
		e, b, n, pr := levelBot(t, srv, config.AutonomyApprove)
		if pr.Merged || b.stage(n) != dev.StageAwaitingApproval {
			t.Fatalf("merged %v, stage %q: want a wait for a maintainer", pr.Merged, b.stage(n))
		}
		note := e.waitNote(b, pr.Number, "merge")
		if !strings.Contains(note, "/approve "+pr.HeadSHA) || !strings.Contains(note, "@"+e.owner.Login) {
			t.Fatalf("waiting note:\n%s", note)
		}
		mallory := e.srv.NewUser(t, "mallory")
		e.commentAs(mallory, pr.Number, "/approve "+pr.HeadSHA)
		e.commentAs(e.reviewer, n, "/approve "+pr.HeadSHA)
		e.commentAs(e.owner, n, "/approve "+pr.HeadSHA[:12])
		b.tick()
		b.tick()
		if e.pull(pr.Number).Merged {
			t.Fatal("merged without a maintainer's approval of the head")
		}
		if got := e.waitNote(b, pr.Number, "merge"); got != note {
			t.Fatalf("the note changed while nothing did:\n%s", got)
		}
		e.approveAs(e.owner, pr)
		b.tick()
		if !e.pull(pr.Number).Merged || e.getIssue(n).State != forge.StateClosed {
			t.Fatal("not merged after the maintainer's approval")
		}
		if recs := b.records(); len(recs) != 1 || recs[0].Reason != ledger.ReasonMerged {
			t.Fatalf("ledger: %+v", recs)
		}
	})
	t.Run("advisory", func(t *testing.T) {
		t.Parallel()
		e, b, n, pr := levelBot(t, srv, config.AutonomyAdvisory)
		e.approveAs(e.owner, pr)
		b.tick()
		b.tick()
		if e.pull(pr.Number).Merged {
			t.Fatal("merged at level advisory")
		}
		if note := e.waitNote(b, pr.Number, "merge"); !strings.Contains(note, "`advisory`") {
			t.Fatalf("advisory note:\n%s", note)
		}
		if err := e.repo.Merge(testCtx(t), pr.Number, forge.MergeOptions{HeadSHA: pr.HeadSHA}); err != nil {
			t.Fatal(err)
		}
		b.tick()
		if i := e.getIssue(n); i.State != forge.StateClosed || i.HasLabel(forge.LabelInProgress) {
			t.Fatalf("issue after the maintainer's merge: %+v", i)
		}
		if recs := b.records(); len(recs) != 1 || recs[0].Reason != ledger.ReasonMerged {
			t.Fatalf("ledger: %+v", recs)
		}
	})
}

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/cilog"
	"github.com/disinto/disinto/lib/cilog/cilogtest"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

// TestDevCILogReachesTheModel: CI fails on the pull request's head with a
// log holding a compiler error no status mentions, and the resumed
// session's request to the model carries that exact text. Two dev bots
// work two issues against the real Gitea: one reads Woodpecker (a
// stand-in server in the real API's shape, as no Woodpecker server can be
// built here), the other the forge's Actions job logs, which this Gitea
// does not serve (Actions off, as on a Forgejo before 16): there the
// session gets the status's description and link, as without a log
// source.
func TestDevCILogReachesTheModel(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t,
		claudetest.Scenario{Name: "cilog-woodpecker", Turns: fixTurns(1)},
		claudetest.Scenario{Name: "cilog-absent", Turns: fixTurns(1)},
	)
	const wpErr = "./widget.go:12:2: undefined: frobnicateWidgetWP7q"

	// Woodpecker: the bot reads the pipeline of the head from the API.
	wp := cilogtest.StartWoodpecker(t, 3, "wp-token-e2e-0001")
	wpSrc, err := cilog.NewWoodpecker(cilog.WoodpeckerOptions{Server: wp.URL, Token: wp.Token, RepoID: 3})
	if err != nil {
		t.Fatal(err)
	}
	wb := e.newBot("dev-wp")
	wb.rebuild(func(o *dev.Options) {
		o.CISystem = config.CIWoodpecker
		o.CILogs = cilog.New(cilog.Options{Woodpecker: wpSrc})
	})
	a := e.issue("CI log from Woodpecker", "scenario: cilog-woodpecker", forge.LabelBacklog)
	wb.tickUntil("pull request opened", 2, func() bool { return wb.stage(a) == dev.StageAwaitingCI })
	pr := e.onlyPull(branch(a))
	wp.AddPipeline(4, pr.HeadSHA,
		cilogtest.Step{Name: "clone", State: "success"},
		cilogtest.Step{Name: "build", State: "failure", ExitCode: 1, Log: []string{"+ go build ./...", "# example.com/widget", wpErr}})
	e.status(pr, "ci/woodpecker/pr/build", "Pipeline failed", fmt.Sprintf("%s/repos/3/pipeline/4", wp.URL))
	wb.tickUntil("fix pushed", 3, func() bool { return e.pull(pr.Number).HeadSHA != pr.HeadSHA })
	wantInResume(t, e, "cilog-woodpecker", wpErr, "Log of pipeline 4 (woodpecker; step build exited 1)")

	// The real Gitea, without Actions: not found, and the statuses alone.
	nb := e.newBot("dev-none")
	nb.rebuild(func(o *dev.Options) { o.CILogs = cilog.New(cilog.Options{Actions: o.Forge.(*forge.RepoClient)}) })
	c := e.issue("No CI log", "scenario: cilog-absent", forge.LabelBacklog)
	nb.tickUntil("pull request opened", 2, func() bool { return nb.stage(c) == dev.StageAwaitingCI })
	pr = e.onlyPull(branch(c))
	link := fmt.Sprintf("%s/%s/actions/runs/1/jobs/1", e.srv.URL, e.repo.Slug())
	e.status(pr, "ci / build (pull_request)", "Failing after 1s: TestAbsentLogQ9", link)
	nb.tickUntil("fix pushed", 3, func() bool { return e.pull(pr.Number).HeadSHA != pr.HeadSHA })
	wantInResume(t, e, "cilog-absent", "Failing after 1s: TestAbsentLogQ9", link)
	if anyText(e.model.MessageRequests("cilog-absent"), "Log of ") {
		t.Fatal("a log section without a log")
	}
}

// wantInResume fails t unless a request of scenario's resumed session
// (after its first) carries every want.
func wantInResume(t *testing.T, e *devEnv, scenario string, want ...string) {
	t.Helper()
	reqs := e.model.MessageRequests(scenario)
	if len(reqs) < 3 {
		t.Fatalf("%s: %d model requests, want a resumed session", scenario, len(reqs))
	}
	for _, w := range want {
		if anyText(reqs[:2], w) {
			t.Fatalf("%s: %q reached the model before CI ran", scenario, w)
		}
		if !anyText(reqs[2:], w) {
			t.Errorf("%s: the resumed session did not see %q", scenario, w)
		}
	}
}

// status posts a commit status on pr's head as a CI system would.
func (e *devEnv) status(pr forge.PullRequest, context, desc, target string) {
	e.t.Helper()
	if err := e.repo.CreateStatus(testCtx(e.t), pr.HeadSHA, forge.CommitStatus{
		Context: context, State: forge.CIFailure, Description: desc, TargetURL: target,
	}); err != nil {
		e.t.Fatal(err)
	}
}

// TestDevCILogFromGiteaActions: a real Gitea with Actions runs the
// project's workflow for the pull request; a runner (forgetest.ActionsRunner,
// speaking Gitea's runner protocol) reports a failed build whose log
// holds a compiler error, the server posts the failing status, and the
// dev agent reads the job's log through the jobs API into the resumed
// session.
func TestDevCILogFromGiteaActions(t *testing.T) {
	t.Parallel()
	const actionsErr = "./widget.go:40:9: cannot use zork (variable of type int) as string value in return statement: ACT3k"
	srv := forgetest.StartWith(t, forgetest.Options{Actions: true})
	e := newDevEnvOn(t, srv, claudetest.Scenario{Name: "cilog-actions", Turns: fixTurns(1)})
	runner := srv.NewRunner(t, "ubuntu-latest")
	if _, err := e.repo.PutFile(testCtx(t), forge.FileChange{Path: ".gitea/workflows/ci.yml", Branch: "main", Message: "ci",
		Content: []byte("name: ci\non: pull_request\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: go build ./...\n")}); err != nil {
		t.Fatal(err)
	}
	b := e.newBot("dev-bot")
	b.rebuild(func(o *dev.Options) { o.CILogs = cilog.New(cilog.Options{Actions: o.Forge.(*forge.RepoClient)}) })
	n := e.issue("CI log from Actions", "scenario: cilog-actions", forge.LabelBacklog)
	b.tickUntil("pull request opened", 2, func() bool { return b.stage(n) == dev.StageAwaitingCI })
	pr := e.onlyPull(branch(n))
	task := runner.Next(t, 2*time.Minute)
	if task.SHA != pr.HeadSHA {
		t.Fatalf("job runs on %s, the pull request's head is %s", task.SHA, pr.HeadSHA)
	}
	runner.Finish(t, task, []string{"go build ./...", "# example.com/widget", actionsErr, "exit status 1"}, true)
	b.tickUntil("fix pushed", 3, func() bool { return e.pull(pr.Number).HeadSHA != pr.HeadSHA })
	wantInResume(t, e, "cilog-actions", actionsErr, "Log of job ci / build (pull_request) (actions)", "Failing after")
}

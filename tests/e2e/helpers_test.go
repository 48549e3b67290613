// Package e2e holds end-to-end tests across the whole system: the real
// Gitea server (lib/forge/forgetest) and the real claude CLI against the
// scripted model server (lib/claude/claudetest).
package e2e

import (
	"context"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/ledger"
)

// devEnv is the shared environment of the end-to-end tests: one project
// repository on a real Gitea with its labels, an owner (who plays CI and
// humans), a review bot collaborator, the scripted model server and a bare
// mirror repository. Agents are added by newBot and newReviewer.
type devEnv struct {
	t        testing.TB
	srv      *forgetest.Server
	owner    forgetest.User
	reviewer forgetest.User
	repo     *forge.RepoClient // as the owner (plays CI and humans)
	model    *claudetest.Server
	modelURL string
	mirror   string
}

func newDevEnv(t testing.TB, scenarios ...claudetest.Scenario) *devEnv {
	t.Helper()
	return newDevEnvOn(t, forgetest.Start(t), scenarios...)
}

// newDevEnvOn is newDevEnv on a server the test started.
func newDevEnvOn(t testing.TB, srv *forgetest.Server, scenarios ...claudetest.Scenario) *devEnv {
	t.Helper()
	e := &devEnv{t: t, srv: srv}
	e.model, e.modelURL = claudetest.Start(t, scenarios...)
	e.owner = e.srv.NewUser(t, "owner")
	e.reviewer = e.srv.NewUser(t, "review-bot")
	e.repo = e.srv.NewRepo(t, e.owner, "proj")
	ctx := testCtx(t)
	if _, err := e.repo.EnsureLabels(ctx); err != nil {
		t.Fatalf("labels: %v", err)
	}
	if err := e.repo.AddCollaborator(ctx, e.reviewer.Login, forge.PermWrite); err != nil {
		t.Fatalf("collaborator: %v", err)
	}
	e.mirror = filepath.Join(t.TempDir(), "mirror.git")
	runGit(t, "", "init", "-q", "--bare", e.mirror)
	return e
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// scriptedRunner is a model runner for the real claude CLI against the
// scripted model server at modelURL, keeping transcripts under data.
func scriptedRunner(t testing.TB, modelURL, data string) claude.Runner {
	t.Helper()
	runner, err := claude.New(claude.Options{
		Bin:           claudetest.RequireCLI(t),
		Backends:      []claude.Backend{{Name: "scripted", BaseURL: modelURL, APIKey: "sk-test-not-a-real-key", MaxSessions: 2}},
		BaseEnv:       claudetest.Env(t),
		IdleGrace:     30 * time.Second,
		Timeout:       4 * time.Minute,
		TranscriptDir: filepath.Join(data, "transcripts"),
		Logger:        zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return runner
}

// openLedger opens the ledger under data, closed when the test ends.
func openLedger(t testing.TB, data string) *ledger.Ledger {
	t.Helper()
	led, err := ledger.Open(filepath.Join(data, "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Close() })
	return led
}

// ledgerRecords reads every record of the ledger under data.
func ledgerRecords(t testing.TB, data string) []ledger.Record {
	t.Helper()
	recs, _, err := ledger.Read(filepath.Join(data, "ledger"), ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// tickAndWait runs one pass of a as a daemon's runtime does and waits for
// the background work it started.
func tickAndWait(t testing.TB, rt *agent.Runtime, a agent.Agent, proj *config.Project, role config.Role) {
	t.Helper()
	ctx := testCtx(t)
	if err := rt.Tick(ctx, a, proj, role, agent.CauseManual); err != nil {
		t.Fatalf("%s tick: %v", role, err)
	}
	if err := rt.Wait(ctx); err != nil {
		t.Fatalf("%s wait: %v", role, err)
	}
}

// repeatUntil calls step until cond holds, at most max times.
func repeatUntil(t testing.TB, what string, max int, step func(), cond func() bool) {
	t.Helper()
	for i := 0; i < max; i++ {
		step()
		if cond() {
			return
		}
	}
	t.Fatalf("after %d passes: %s did not happen", max, what)
}

// ownerClone clones the repository into a new directory as the owner (a
// human who pushes), checked out at branch when it is not empty.
func (e *devEnv) ownerClone(branch string) string {
	e.t.Helper()
	u, err := url.Parse(e.srv.URL)
	if err != nil {
		e.t.Fatal(err)
	}
	u.User = url.UserPassword(e.owner.Login, e.owner.Password)
	u.Path = "/" + e.repo.Slug() + ".git"
	dir := filepath.Join(e.t.TempDir(), "owner")
	args := []string{"clone", "-q"}
	if branch != "" {
		args = append(args, "--branch", branch)
	}
	runGit(e.t, "", append(args, u.String(), dir)...)
	runGit(e.t, dir, "config", "user.name", e.owner.Login)
	runGit(e.t, dir, "config", "user.email", e.owner.Login+"@example.invalid")
	return dir
}

func (e *devEnv) issue(title, body string, labels ...forge.LabelName) int64 {
	e.t.Helper()
	i, err := e.repo.CreateIssue(testCtx(e.t), forge.NewIssue{Title: title, Body: body, Labels: labels})
	if err != nil {
		e.t.Fatalf("create issue: %v", err)
	}
	return i.Number
}

func (e *devEnv) getIssue(n int64) forge.Issue {
	e.t.Helper()
	i, err := e.repo.GetIssue(testCtx(e.t), n)
	if err != nil {
		e.t.Fatal(err)
	}
	return i
}

// pullsFor returns the pull requests (any state) whose head is branch.
func (e *devEnv) pullsFor(branch string) []forge.PullRequest {
	e.t.Helper()
	var out []forge.PullRequest
	for _, p := range e.allPulls() {
		if p.Head == branch {
			out = append(out, p)
		}
	}
	return out
}

// allPulls returns every pull request of the repository. (A merged pull
// request whose branch was deleted no longer reports its head branch.)
func (e *devEnv) allPulls() []forge.PullRequest {
	e.t.Helper()
	ps, err := e.repo.ListPulls(testCtx(e.t), forge.StateAll)
	if err != nil {
		e.t.Fatal(err)
	}
	return ps
}

func (e *devEnv) onlyPull(branch string) forge.PullRequest {
	e.t.Helper()
	ps := e.pullsFor(branch)
	if len(ps) != 1 {
		e.t.Fatalf("%d pull requests for %s, want 1", len(ps), branch)
	}
	return ps[0]
}

func (e *devEnv) pull(n int64) forge.PullRequest {
	e.t.Helper()
	p, err := e.repo.GetPull(testCtx(e.t), n)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// ci posts a commit status on the pull request's head, as a CI would.
func (e *devEnv) ci(pr forge.PullRequest, st forge.CIState, desc string) {
	e.t.Helper()
	if err := e.repo.CreateStatus(testCtx(e.t), pr.HeadSHA, forge.CommitStatus{
		Context: "ci/test", State: st, Description: desc, TargetURL: e.srv.URL + "/ci/pipeline/7",
	}); err != nil {
		e.t.Fatal(err)
	}
}

// review submits a formal review as the review bot on the current head.
func (e *devEnv) review(pr forge.PullRequest, ev forge.ReviewEvent, body string) {
	e.t.Helper()
	rc := e.reviewer.Client.Repo(e.repo.Owner(), e.repo.Name())
	if _, err := rc.CreateReview(testCtx(e.t), pr.Number, forge.NewReview{Event: ev, Body: body, CommitID: pr.HeadSHA}); err != nil {
		e.t.Fatalf("review: %v", err)
	}
}

func hasComment(t testing.TB, r *forge.RepoClient, n int64, sub string) bool {
	t.Helper()
	cs, err := r.ListComments(testCtx(t), n)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if strings.Contains(c.Body, sub) {
			return true
		}
	}
	return false
}

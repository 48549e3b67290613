package security

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger/ledgertest"
	"github.com/disinto/disinto/lib/phase"
)

// scene is one attack on the dev agent: a project repository on the shared
// Gitea owned by a maintainer, the dev bot as a collaborator, an outsider
// without rights, and the dev agent (real forge, real git) driven by an
// in-process scripted model that commits one change per session. These
// attacks go through the forge, not the model, so the real CLI would add
// time and nothing else.
type scene struct {
	t        *testing.T
	srv      *forgetest.Server
	owner    forgetest.User
	devBot   forgetest.User
	outsider forgetest.User
	reviewer forgetest.User    // the review bot; zero without one
	gardener forgetest.User    // the gardener bot; zero without one
	repo     *forge.RepoClient // as the owner
	agent    *dev.Agent
	rt       *agent.Runtime
	runner   *claudetest.Scripted
	// push puts the session's commit on the forge's branch before the
	// session ends (as an earlier turn of the agent's would have), so that
	// the branch exists while the session runs; during, when set, runs in
	// each session after that.
	push   bool
	during func(inv claude.Invocation)
}

// sceneOpts shape a scene.
type sceneOpts struct {
	// reviewBot configures a review bot with write access.
	reviewBot bool
	// devPerm is the dev bot's permission (write when empty).
	devPerm forge.Permission
	// gardenerBot configures a gardener bot with write access.
	gardenerBot bool
}

func newScene(t *testing.T, o sceneOpts) *scene {
	t.Helper()
	s := &scene{t: t, srv: gitea.Get(t)}
	s.owner, s.devBot, s.outsider = s.srv.NewUser(t, "owner"), s.srv.NewUser(t, "dev-bot"), s.srv.NewUser(t, "mallory")
	s.repo = s.srv.NewRepo(t, s.owner, "proj")
	ctx := sceneCtx(t)
	if _, err := s.repo.EnsureLabels(ctx); err != nil {
		t.Fatalf("labels: %v", err)
	}
	if o.devPerm == "" {
		o.devPerm = forge.PermWrite
	}
	s.collaborator(s.devBot, o.devPerm)
	bots := []string{s.devBot.Login}
	if o.reviewBot {
		s.reviewer = s.srv.NewUser(t, "review-bot")
		s.collaborator(s.reviewer, forge.PermWrite)
		bots = append(bots, s.reviewer.Login)
	}
	if o.gardenerBot {
		s.gardener = s.srv.NewUser(t, "gardener-bot")
		s.collaborator(s.gardener, forge.PermWrite)
		bots = append(bots, s.gardener.Login)
	}
	f, err := formula.Load(formulas.FS, "dev")
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	s.runner = &claudetest.Scripted{Script: s.session}
	s.rt = agent.New(agent.Options{Ledger: &ledgertest.Memory{}, Log: zerolog.Nop()})
	s.agent, err = dev.New(dev.Options{
		Project: "proj", Repo: s.repo.Slug(), PrimaryBranch: "main", CISystem: config.CINone,
		Forge: s.devBot.Client.Repo(s.repo.Owner(), s.repo.Name()), Claude: s.runner,
		Git: dev.NewGit(dev.GitOptions{
			Clone: filepath.Join(data, "clone"), RemoteURL: s.srv.URL + "/" + s.repo.Slug() + ".git", ForgeURL: s.srv.URL,
			User: s.devBot.Login, Password: s.devBot.Password, Primary: "main",
		}),
		Formula: f, DataDir: data, BotUsernames: bots, ReviewBot: s.reviewer.Login,
		Secrets: []string{s.devBot.Token, s.devBot.Password}, Log: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sceneCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func (s *scene) collaborator(u forgetest.User, p forge.Permission) {
	s.t.Helper()
	if err := s.repo.AddCollaborator(sceneCtx(s.t), u.Login, p); err != nil {
		s.t.Fatalf("collaborator %s: %v", u.Login, err)
	}
}

// as returns u's handle on the project repository.
func (s *scene) as(u forgetest.User) *forge.RepoClient {
	return u.Client.Repo(s.repo.Owner(), s.repo.Name())
}

// session is the scripted model: it commits a change in the worktree,
// pushes it when asked, lets the attack run and asks for CI.
func (s *scene) session(_ context.Context, n int, inv claude.Invocation) (claude.Result, error) {
	file := filepath.Join(inv.Dir, fmt.Sprintf("change-%d.txt", n))
	if err := os.WriteFile(file, []byte("the requested change\n"), 0o600); err != nil {
		return claude.Result{}, err
	}
	steps := [][]string{{"add", "-A"}, {"commit", "-q", "-m", "fix: the requested change"}}
	if s.push {
		u, err := url.Parse(s.srv.URL + "/" + s.repo.Slug() + ".git")
		if err != nil {
			return claude.Result{}, err
		}
		u.User = url.UserPassword(s.devBot.Login, s.devBot.Password)
		steps = append(steps, []string{"push", "-q", u.String(), "HEAD:refs/heads/" + inv.Env[formula.EnvBranch]})
	}
	for _, args := range steps {
		cmd := exec.Command("git", args...)
		cmd.Dir = inv.Dir
		cmd.Env = os.Environ()
		for k, v := range inv.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return claude.Result{}, fmt.Errorf("git %v: %v\n%s", args, err, out)
		}
	}
	if s.during != nil {
		s.during(inv)
	}
	if err := phase.Write(inv.Env[formula.EnvPhaseFile], phase.AwaitingCI, ""); err != nil {
		return claude.Result{}, err
	}
	return claude.Result{SessionID: "00000000-0000-4000-8000-000000000001", Subtype: "success", HasResult: true}, nil
}

// issue opens a backlog issue as the owner.
func (s *scene) issue(title string) int64 {
	s.t.Helper()
	i, err := s.repo.CreateIssue(sceneCtx(s.t), forge.NewIssue{Title: title, Body: "Please make the change.", Labels: []forge.LabelName{forge.LabelBacklog}})
	if err != nil {
		s.t.Fatalf("create issue: %v", err)
	}
	return i.Number
}

// tick runs one dev pass and waits for the sessions it started.
func (s *scene) tick() {
	s.t.Helper()
	ctx := sceneCtx(s.t)
	if err := s.rt.Tick(ctx, s.agent, &config.Project{Name: "proj"}, config.RoleDev, agent.CauseManual); err != nil {
		s.t.Fatalf("dev tick: %v", err)
	}
	if err := s.rt.Wait(ctx); err != nil {
		s.t.Fatalf("dev wait: %v", err)
	}
}

func (s *scene) pulls() []forge.PullRequest {
	s.t.Helper()
	ps, err := s.repo.ListPulls(sceneCtx(s.t), forge.StateAll)
	if err != nil {
		s.t.Fatal(err)
	}
	return ps
}

// devPull returns the pull request dev-bot works on for issue n.
func (s *scene) devPull(n int64) forge.PullRequest {
	s.t.Helper()
	st, ok, err := s.agent.State(n)
	if err != nil || !ok || st.PR == 0 {
		s.t.Fatalf("issue #%d: no pull request in the dev state (%+v, %v, %v)", n, st, ok, err)
	}
	p, err := s.repo.GetPull(sceneCtx(s.t), st.PR)
	if err != nil {
		s.t.Fatal(err)
	}
	return p
}

// review submits a formal review by u on the pull request's head.
func (s *scene) review(u forgetest.User, p forge.PullRequest, ev forge.ReviewEvent) {
	s.t.Helper()
	if _, err := s.as(u).CreateReview(sceneCtx(s.t), p.Number, forge.NewReview{Event: ev, Body: "looks good", CommitID: p.HeadSHA}); err != nil {
		s.t.Fatalf("review by %s: %v", u.Login, err)
	}
}

// comment posts body on n as u.
func (s *scene) comment(u forgetest.User, n int64, body string) {
	s.t.Helper()
	if _, err := s.as(u).CreateComment(sceneCtx(s.t), n, body); err != nil {
		s.t.Fatalf("comment by %s: %v", u.Login, err)
	}
}

// wantOnlyMergedBy fails unless exactly one pull request is merged and
// login opened it.
func (s *scene) wantOnlyMergedBy(login string) {
	s.t.Helper()
	var mine []string
	for _, p := range s.pulls() {
		switch {
		case p.Merged && !strings.EqualFold(p.Author, login):
			s.t.Errorf("pull request #%d by %s (from fork %v) was merged", p.Number, p.Author, p.FromFork)
		case p.Merged:
			mine = append(mine, fmt.Sprint(p.Number))
		}
	}
	if len(mine) != 1 {
		s.t.Errorf("%d pull requests by %s merged (%v), want 1", len(mine), login, mine)
	}
}

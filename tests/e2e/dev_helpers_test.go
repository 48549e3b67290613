package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
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
	"github.com/disinto/disinto/lib/ledger"
)

// botParams is everything needed to run one daemon's dev agent; it is
// passed as JSON to a child process in the crash test.
type botParams struct {
	ForgeURL, Owner, Repo, Login, Password, Token string
	ModelURL, Data, ReviewBot, Mirror             string
	// HTTPClient, when set, carries the agent's forge requests.
	HTTPClient *http.Client `json:"-"`
}

// devBot is one daemon's dev agent: its own user, data dir and runtime.
type devBot struct {
	t    testing.TB
	p    botParams
	user forgetest.User
	data string
	rt   *agent.Runtime
	a    *dev.Agent
	proj *config.Project
	// opts built a; runner and git are its model runner and git backend.
	opts   dev.Options
	runner claude.Runner
	git    *dev.Git
}

// rebuild replaces the agent with one built from modified options.
func (b *devBot) rebuild(mod func(*dev.Options)) {
	b.t.Helper()
	mod(&b.opts)
	a, err := dev.New(b.opts)
	if err != nil {
		b.t.Fatal(err)
	}
	b.a = a
}

func (e *devEnv) newBot(prefix string) *devBot {
	e.t.Helper()
	u := e.srv.NewUser(e.t, prefix)
	if err := e.repo.AddCollaborator(testCtx(e.t), u.Login, forge.PermWrite); err != nil {
		e.t.Fatalf("collaborator: %v", err)
	}
	p := botParams{ForgeURL: e.srv.URL, Owner: e.repo.Owner(), Repo: e.repo.Name(), Login: u.Login,
		Password: u.Password, Token: u.Token, ModelURL: e.modelURL, Data: e.t.TempDir(),
		ReviewBot: e.reviewer.Login, Mirror: e.mirror}
	b := startBot(e.t, p)
	b.user = u
	return b
}

// startBot builds the agent and runtime as a (re)started daemon does.
func startBot(t testing.TB, p botParams) *devBot {
	t.Helper()
	led := openLedger(t, p.Data)
	b := &devBot{t: t, p: p, data: p.Data, user: forgetest.User{Login: p.Login, Password: p.Password, Token: p.Token}}
	b.rt = agent.New(agent.Options{Ledger: led, Log: zerolog.Nop()})
	b.proj = &config.Project{Name: "proj", Repo: p.Owner + "/" + p.Repo, PrimaryBranch: "main"}
	runner := scriptedRunner(t, p.ModelURL, p.Data)
	f, err := formula.Load(formulas.FS, "dev")
	if err != nil {
		t.Fatal(err)
	}
	fc, err := forge.New(forge.Options{URL: p.ForgeURL, Token: p.Token, User: p.Login, HTTPClient: p.HTTPClient})
	if err != nil {
		t.Fatal(err)
	}
	g := dev.NewGit(dev.GitOptions{
		Clone:     filepath.Join(p.Data, "clones", "proj"),
		RemoteURL: fmt.Sprintf("%s/%s/%s.git", p.ForgeURL, p.Owner, p.Repo), ForgeURL: p.ForgeURL,
		User: p.Login, Password: p.Password, Primary: "main",
	})
	b.runner, b.git = runner, g
	b.opts = dev.Options{
		Project: "proj", Repo: p.Owner + "/" + p.Repo, PrimaryBranch: "main", CISystem: config.CIStatuses,
		Mirrors: map[string]string{"backup": p.Mirror},
		Forge:   fc.Repo(p.Owner, p.Repo), Claude: runner, Git: g, Formula: f, DataDir: p.Data,
		ReviewBot: p.ReviewBot, Secrets: []string{p.Token, p.Password},
		Limits: dev.Limits{MaxTurns: 20, SessionTimeout: 4 * time.Minute}, Log: zerolog.Nop(),
	}
	b.rebuild(func(*dev.Options) {})
	return b
}

// tick runs one pass and waits for the sessions it started.
func (b *devBot) tick() {
	b.t.Helper()
	tickAndWait(b.t, b.rt, b.a, b.proj, config.RoleDev)
}

func (b *devBot) stage(n int64) dev.Stage {
	st, ok, err := b.a.State(n)
	if err != nil {
		b.t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return st.Stage
}

// tickUntil ticks until cond holds, at most max times.
func (b *devBot) tickUntil(what string, max int, cond func() bool) {
	b.t.Helper()
	repeatUntil(b.t, what, max, b.tick, cond)
}

// greenToReview passes CI on pr's head and ticks until issue n waits for
// a review.
func (b *devBot) greenToReview(e *devEnv, n int64, pr forge.PullRequest) {
	b.t.Helper()
	e.ci(pr, forge.CISuccess, "green")
	b.tickUntil("awaiting review", 3, func() bool { return b.stage(n) == dev.StageAwaitingReview })
}

// greenToMerge passes CI on pr's head, approves it once issue n waits for
// the review and ticks until the pull request is merged.
func (b *devBot) greenToMerge(e *devEnv, n int64, pr forge.PullRequest) {
	b.t.Helper()
	b.greenToReview(e, n, pr)
	e.review(pr, forge.ReviewApprove, "ok")
	b.tickUntil("merged", 3, func() bool { return e.pull(pr.Number).Merged })
}

func (b *devBot) records() []ledger.Record {
	b.t.Helper()
	return ledgerRecords(b.t, b.data)
}

// Model scripts. Every Bash step runs in the session's worktree with the
// session's environment (DISINTO_PHASE_FILE, git credentials).
func implement(file, content string) claudetest.Turn {
	return claudetest.Tools(claudetest.Bash(fmt.Sprintf(
		`printf '%%s\n' %q >> %s && git add %s && git commit -q -m "fix: change (#$DISINTO_ISSUE)" && printf 'PHASE:awaiting_ci\n' > "$DISINTO_PHASE_FILE" && echo committed`,
		content, file, file)))
}

func refuse(json string) claudetest.Turn {
	return claudetest.Tools(claudetest.Bash(fmt.Sprintf(`printf '%%s' %q > "$DISINTO_RESULT_FILE" && echo refused`, json)))
}

func branch(n int64) string { return fmt.Sprintf("fix/issue-%d", n) }

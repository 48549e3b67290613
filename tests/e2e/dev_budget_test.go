package e2e

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/gateway"
	"github.com/disinto/disinto/lib/ledger"
)

// budgetBot is a dev bot whose sessions reach the scripted model through
// a model gateway, whose day runs on a clock the test moves.
type budgetBot struct {
	*devBot
	mu  sync.Mutex
	now time.Time
}

func (b *budgetBot) clock() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now
}

// nextDay moves the gateway's clock a day on.
func (b *budgetBot) nextDay() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = b.now.Add(24 * time.Hour)
}

// newBudgetBot is a dev bot held to the project's budget and to issue,
// the bound of each issue's runs.
func (e *devEnv) newBudgetBot(budget config.Budget, issue config.Bound) *budgetBot {
	e.t.Helper()
	b := &budgetBot{devBot: e.newBot("dev-bot"), now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	g, err := gateway.New(gateway.Options{Backends: []gateway.Backend{{Name: "scripted", URL: e.modelURL, APIKey: "sk-test-not-a-real-key"}},
		Log: zerolog.Nop(), Now: b.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	e.t.Cleanup(srv.Close)
	runner, err := claude.New(claude.Options{
		Bin: claudetest.RequireCLI(e.t), Backends: []claude.Backend{{Name: "scripted", BaseURL: e.modelURL, MaxSessions: 2}},
		BaseEnv: claudetest.Env(e.t), IdleGrace: 30 * time.Second, Timeout: 4 * time.Minute,
		TranscriptDir: filepath.Join(b.data, "transcripts"), Logger: zerolog.Nop(), Gateway: g, GatewayURL: srv.URL,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	b.proj.Budget = budget
	b.rebuild(func(o *dev.Options) { o.Claude, o.Limits.IssueBudget = runner, issue })
	return b
}

// wantWaiting checks that issue n waits on a spent budget: not blocked,
// told once, in a comment that names the budget.
func (b *budgetBot) wantWaiting(e *devEnv, n int64, budget string) {
	b.t.Helper()
	if st := b.stage(n); st == dev.StageBlocked || e.getIssue(n).HasLabel(forge.LabelBlocked) {
		b.t.Fatalf("a spent budget blocked the issue (stage %q)", st)
	}
	cs, err := e.repo.ListComments(testCtx(b.t), n)
	if err != nil {
		b.t.Fatal(err)
	}
	var said []string
	for _, c := range cs {
		if strings.Contains(c.Body, "waits: ") {
			said = append(said, c.Body)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], budget) {
		b.t.Fatalf("comments about the budget: %q, want one naming %q", said, budget)
	}
}

// mergedOnce checks that the issue's work was merged in the end.
func (b *budgetBot) mergedOnce(e *devEnv, n int64) {
	b.t.Helper()
	b.tickUntil("session finished", 3, func() bool { return b.stage(n) == dev.StageAwaitingCI })
	b.greenToMerge(e, n, e.onlyPull(branch(n)))
	recs := b.records()
	if len(recs) != 1 || recs[0].Reason != ledger.ReasonMerged {
		b.t.Fatalf("ledger: %+v", recs)
	}
}

// TestDevDayBudget: a project whose day is spent stops its run at the
// bound; no session starts while the day lasts; the next day the issue
// is worked again and merged.
func TestDevDayBudget(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-day", InputTokens: 400,
		Turns: []claudetest.Turn{implement("day.txt", "a day's work"), claudetest.Text("Added day.txt.")}})
	b := e.newBudgetBot(config.Budget{Day: config.Bound{Tokens: 300}}, config.Bound{})
	n := e.issue("Add day.txt", "scenario: dev-day\n\nAdd day.txt.", forge.LabelBacklog)

	b.tick() // one request (405 tokens), the next refused
	b.wantWaiting(e, n, "the day budget of proj (300 tokens) is spent: 405 used")
	asked := len(e.model.MessageRequests("dev-day"))
	b.tick()
	if got := len(e.model.MessageRequests("dev-day")); got != asked {
		t.Fatalf("%d model requests on a spent day", got-asked)
	}
	b.wantWaiting(e, n, "day budget")
	b.nextDay()
	b.mergedOnce(e, n)
}

// TestDevRunBudget: each run stops at its bound, and the next run goes on
// where it stopped until the work is done and merged.
func TestDevRunBudget(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-run", InputTokens: 400, Turns: []claudetest.Turn{
		implement("run.txt", "one run's work"), claudetest.Tools(claudetest.Bash("echo checked")), claudetest.Text("Added run.txt."),
	}})
	b := e.newBudgetBot(config.Budget{Run: config.Bound{Tokens: 300}}, config.Bound{})
	n := e.issue("Add run.txt", "scenario: dev-run\n\nAdd run.txt.", forge.LabelBacklog)

	b.tick()
	b.wantWaiting(e, n, "the run budget of proj (300 tokens) is spent: 405 used")
	b.mergedOnce(e, n)
	b.wantWaiting(e, n, "run budget")
}

// TestDevIssueBudget: an issue whose runs spent its budget gets no fix
// session; once the budget is raised, it is fixed and merged.
func TestDevIssueBudget(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-issue", InputTokens: 400, Turns: fixTurns(1)})
	b := e.newBudgetBot(config.Budget{}, config.Bound{Tokens: 800})
	n := e.issue("Add work.txt", "scenario: dev-issue\n\nAdd work.txt.", forge.LabelBacklog)

	b.tick() // two requests: 810 tokens
	pr := e.onlyPull(branch(n))
	e.ci(pr, forge.CIFailure, "TestWork failed")
	b.tickUntil("budget noted", 3, func() bool { return hasComment(t, e.repo, n, "waits: ") })
	b.wantWaiting(e, n, "the issue budget of 800 tokens is spent (810 used)")
	if head := e.pull(pr.Number).HeadSHA; head != pr.HeadSHA {
		t.Fatal("a fix was pushed past the issue's budget")
	}
	b.rebuild(func(o *dev.Options) { o.Limits.IssueBudget.Tokens = 5000 })
	b.tickUntil("fix pushed", 3, func() bool { return e.pull(pr.Number).HeadSHA != pr.HeadSHA })
	b.greenToMerge(e, n, e.onlyPull(branch(n)))
	if recs := b.records(); len(recs) != 1 || recs[0].Reason != ledger.ReasonMerged {
		t.Fatalf("ledger: %+v", recs)
	}
}

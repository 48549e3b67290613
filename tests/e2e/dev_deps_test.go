package e2e

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/ledger"
)

// statusComments returns the dev bot's dependency status comments on n.
func (b *devBot) statusComments(e *devEnv, n int64) []forge.Comment {
	b.t.Helper()
	cs, err := e.repo.ListComments(testCtx(b.t), n)
	if err != nil {
		b.t.Fatal(err)
	}
	var out []forge.Comment
	for _, c := range cs {
		if _, ok := forge.FindMarker(c.Body, forge.MarkerDepWait); ok && c.Author == b.user.Login {
			out = append(out, c)
		}
	}
	return out
}

// proxiedBot is newBot with the agent's forge requests counted.
func (e *devEnv) proxiedBot(prefix string) (*devBot, *forgetest.Proxy) {
	e.t.Helper()
	proxy := forgetest.NewProxy(e.t, e.srv.URL)
	u := e.srv.NewUser(e.t, prefix)
	if err := e.repo.AddCollaborator(testCtx(e.t), u.Login, forge.PermWrite); err != nil {
		e.t.Fatalf("collaborator: %v", err)
	}
	b := startBot(e.t, botParams{ForgeURL: proxy.URL, Owner: e.repo.Owner(), Repo: e.repo.Name(), Login: u.Login,
		Password: u.Password, Token: u.Token, ModelURL: e.modelURL, Data: e.t.TempDir(),
		ReviewBot: e.reviewer.Login, Mirror: e.mirror})
	return b, proxy
}

// quietTicks ticks twice and fails unless the agent only listed issues
// and pull requests.
func (b *devBot) quietTicks(proxy *forgetest.Proxy) {
	b.t.Helper()
	proxy.Reset()
	b.tick()
	b.tick()
	for req := range proxy.Counts() {
		if !strings.HasPrefix(req, "GET ") || !(strings.HasSuffix(req, "/issues") || strings.HasSuffix(req, "/pulls")) {
			b.t.Fatalf("ticks without a change made %v", proxy.Counts())
		}
	}
}

// oneStatus returns the one status comment on n and fails otherwise.
func (b *devBot) oneStatus(e *devEnv, n int64) forge.Comment {
	b.t.Helper()
	cs := b.statusComments(e, n)
	if len(cs) != 1 {
		b.t.Fatalf("issue #%d has %d status comments, want 1: %+v", n, len(cs), cs)
	}
	return cs[0]
}

func TestDevDependencyWaitComment(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-deps-wait", Turns: fixTurns(0)})
	b, proxy := e.proxiedBot("dev-bot")
	first := e.issue("First", "open")
	second := e.issue("Second", "open")
	n := e.issue("Third", "scenario: dev-deps-wait\n\n## Depends on\n- #1\n- #2\n", forge.LabelBacklog)

	b.tick()
	c := b.oneStatus(e, n)
	if !strings.Contains(c.Body, "Waiting on #1, #2") {
		t.Fatalf("status comment:\n%s", c.Body)
	}
	b.quietTicks(proxy)
	b.oneStatus(e, n) // not posted again
	if len(e.model.MessageRequests("")) != 0 || b.stage(n) != dev.StageNone {
		t.Fatal("worked a waiting issue")
	}

	if err := e.repo.CloseIssue(testCtx(t), first); err != nil {
		t.Fatal(err)
	}
	b.tick()
	got := b.oneStatus(e, n)
	if got.ID != c.ID || got.Body == c.Body || !strings.Contains(got.Body, "Waiting on #2:") {
		t.Fatalf("after #1 closed: comment %d (was %d):\n%s", got.ID, c.ID, got.Body)
	}
	b.quietTicks(proxy)

	if err := e.repo.CloseIssue(testCtx(t), second); err != nil {
		t.Fatal(err)
	}
	b.tick()
	got = b.oneStatus(e, n)
	if got.ID != c.ID || !strings.Contains(got.Body, "Dependencies satisfied") {
		t.Fatalf("after #2 closed: comment %d (was %d):\n%s", got.ID, c.ID, got.Body)
	}
	pr := e.onlyPull(branch(n))
	b.greenToMerge(e, n, pr)
	if i := e.getIssue(n); i.State != forge.StateClosed {
		t.Fatalf("issue #%d %s after its merge", n, i.State)
	}
	b.oneStatus(e, n)
}

func TestDevDependencyCycle(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t)
	b, proxy := e.proxiedBot("dev-bot")
	x := e.issue("One", "Depends on #2.", forge.LabelBacklog)
	y := e.issue("Two", "## Depends on\n- #1\n", forge.LabelBacklog)

	b.tick()
	for n, path := range map[int64]string{x: "#1 → #2 → #1", y: "#2 → #1 → #2"} {
		i := e.getIssue(n)
		if !i.HasLabel(forge.LabelBlocked) || i.HasLabel(forge.LabelBacklog) || len(i.Assignees) != 0 {
			t.Errorf("#%d: labels %v, assignees %v", n, i.Labels, i.Assignees)
		}
		if !hasComment(t, e.repo, n, "`deps.cycle`") || !hasComment(t, e.repo, n, path) {
			t.Errorf("#%d: no blocked comment naming %s", n, path)
		}
	}
	cycleRecords := func() int {
		k := 0
		for _, r := range b.records() {
			if r.Reason == ledger.ReasonBlocked && r.Code == "deps.cycle" && (r.Issue == x || r.Issue == y) {
				k++
			}
		}
		return k
	}
	if got := cycleRecords(); got != 2 || len(b.records()) != 2 {
		t.Fatalf("%d deps.cycle records of %d, want 2 of 2: %+v", got, len(b.records()), b.records())
	}
	comments := func() int {
		cs1, err := e.repo.ListComments(testCtx(t), x)
		if err != nil {
			t.Fatal(err)
		}
		cs2, err := e.repo.ListComments(testCtx(t), y)
		if err != nil {
			t.Fatal(err)
		}
		return len(cs1) + len(cs2)
	}
	before := comments()
	b.quietTicks(proxy)
	if comments() != before || cycleRecords() != 2 {
		t.Fatal("blocked again on a later tick")
	}
	if len(e.model.MessageRequests("")) != 0 || b.stage(x) != dev.StageNone || b.stage(y) != dev.StageNone {
		t.Fatal("worked an issue of the cycle")
	}
}

func TestDevDependencyWontfix(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t)
	b, proxy := e.proxiedBot("dev-bot")
	dep := e.issue("First", "we will not do this")
	n := e.issue("Second", "This depends on #1.", forge.LabelBacklog)
	if err := e.repo.AddLabels(testCtx(t), dep, forge.LabelWontfix); err != nil {
		t.Fatal(err)
	}
	if err := e.repo.CloseIssue(testCtx(t), dep); err != nil {
		t.Fatal(err)
	}

	b.tick()
	b.quietTicks(proxy)
	i := e.getIssue(n)
	if b.stage(n) != dev.StageNone || len(i.Assignees) != 0 || !i.HasLabel(forge.LabelBacklog) || i.HasLabel(forge.LabelInProgress) {
		t.Fatalf("claimed or changed an issue whose dependency was closed as won't fix: %+v (stage %q)", i, b.stage(n))
	}
	if c := b.oneStatus(e, n); !strings.Contains(c.Body, "#1 was closed as won't fix") {
		t.Fatalf("status comment:\n%s", c.Body)
	}
	if len(e.model.MessageRequests("")) != 0 {
		t.Fatal("a session ran")
	}
}

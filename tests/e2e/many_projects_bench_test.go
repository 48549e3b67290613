package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/agents/review"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/forgeview"
)

// manyProjects is one daemon (one runtime) running the dev and review
// agents of n projects on one forge, every agent behind one counting
// proxy. Each project is idle: 6 open issues (one in the backlog, blocked
// by another) and 2 pull requests by a human waiting for CI.
type manyProjects struct {
	proxy  *forgetest.Proxy
	rt     *agent.Runtime
	agents []scheduled

	mu  sync.Mutex
	now time.Time
}

// scheduled is one agent of one project, as the scheduler holds it.
type scheduled struct {
	a    agent.Agent
	proj *config.Project
	role config.Role
}

func (m *manyProjects) clock() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func newManyProjects(b *testing.B, n int) *manyProjects {
	b.Helper()
	e := newDevEnv(b)
	ctx := context.Background()
	m := &manyProjects{proxy: forgetest.NewProxy(b, e.srv.URL), now: time.Now()}
	m.rt = agent.New(agent.Options{Ledger: openLedger(b, b.TempDir()), Log: zerolog.Nop()})
	u := e.srv.NewUser(b, "dev-bot")
	repos := make([]*forge.RepoClient, n)
	var g errgroup.Group
	g.SetLimit(4)
	for k := range n {
		g.Go(func() error {
			repo := e.srv.NewRepo(b, e.owner, "p")
			repos[k] = repo
			if _, err := repo.EnsureLabels(ctx); err != nil {
				return err
			}
			for _, login := range []string{u.Login, e.reviewer.Login} {
				if err := repo.AddCollaborator(ctx, login, forge.PermWrite); err != nil {
					return err
				}
			}
			var first int64
			for i := range 5 {
				in, err := repo.CreateIssue(ctx, forge.NewIssue{Title: fmt.Sprintf("idea %d", i), Body: "not ready"})
				if err != nil {
					return err
				}
				if i == 0 {
					first = in.Number
				}
			}
			if _, err := repo.CreateIssue(ctx, forge.NewIssue{Title: "task", Body: fmt.Sprintf("## Depends on\n- #%d\n", first),
				Labels: []forge.LabelName{forge.LabelBacklog}}); err != nil {
				return err
			}
			for i := range 2 {
				br := fmt.Sprintf("feature-%d", i)
				if _, err := repo.CreateBranch(ctx, br, "main"); err != nil {
					return err
				}
				if _, err := repo.PutFile(ctx, forge.FileChange{Path: br + ".go", Content: []byte("package x\n"), Branch: br, Message: "add " + br}); err != nil {
					return err
				}
				pr, err := repo.CreatePull(ctx, forge.NewPull{Title: "feature " + br, Head: br, Base: "main"})
				if err != nil {
					return err
				}
				if err := repo.CreateStatus(ctx, pr.HeadSHA, forge.CommitStatus{Context: "ci/test", State: forge.CIPending}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	for k, repo := range repos {
		name := fmt.Sprintf("p%03d", k)
		bot := startBot(b, botParams{ForgeURL: m.proxy.URL, Owner: repo.Owner(), Repo: repo.Name(), Login: u.Login, Password: u.Password,
			Token: u.Token, ModelURL: e.modelURL, Data: b.TempDir(), ReviewBot: e.reviewer.Login, Mirror: e.mirror})
		var view *forgeview.View // the project's roles share one listing, as in the daemon
		bot.rebuild(func(o *dev.Options) {
			view = forgeview.New(forgeview.Options{Forge: o.Forge, Now: m.clock})
			o.Project, o.Now, o.Pulls = name, m.clock, view
		})
		bot.proj.Name = name
		rv := e.newReviewerOn(m.rt, repo, name, m.proxy.URL, func(o *review.Options) { o.Now, o.Pulls = m.clock, view })
		m.agents = append(m.agents, scheduled{rv.a, rv.proj, config.RoleReview}, scheduled{bot.a, bot.proj, config.RoleDev})
	}
	return m
}

// cycle ticks every agent once on its schedule, projects concurrently as
// the scheduler runs them, then moves the clock on by the interval.
func (m *manyProjects) cycle(b *testing.B) {
	ctx := testCtx(b)
	var g errgroup.Group
	g.SetLimit(8)
	for _, s := range m.agents {
		g.Go(func() error { return m.rt.Tick(ctx, s.a, s.proj, s.role, agent.CauseSchedule) })
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	if err := m.rt.Wait(ctx); err != nil {
		b.Fatal(err)
	}
	m.mu.Lock()
	m.now = m.now.Add(config.DefaultInterval(config.RoleDev))
	m.mu.Unlock()
}

// rss returns the process's resident and peak resident set, in MiB.
func rss(b *testing.B) (cur, peak float64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		switch {
		case err != nil:
		case k == "VmRSS":
			cur = kb / 1024
		case k == "VmHWM":
			peak = kb / 1024
		}
	}
	return cur, peak
}

// BenchmarkIdleCycle100Projects reports the wall time and forge requests
// of one idle cycle over 100 projects' dev and review agents in one
// daemon, and the process's memory. The forge server runs in a process of
// its own and is not counted. Run:
// go test -run '^$' -bench IdleCycle100Projects -benchtime 12x ./tests/e2e/
func BenchmarkIdleCycle100Projects(b *testing.B) {
	const n = 100
	m := newManyProjects(b, n)
	for range 3 { // resolve identities, read the lists, settle the CI reads
		m.cycle(b)
	}
	m.proxy.Reset()
	for b.Loop() {
		m.cycle(b)
	}
	cur, peak := rss(b)
	b.ReportMetric(float64(m.proxy.Total())/float64(b.N), "requests/cycle")
	b.ReportMetric(float64(m.proxy.Total())/float64(b.N)/n, "requests/project")
	b.ReportMetric(cur, "rss-MiB")
	b.ReportMetric(peak, "peak-rss-MiB")
}

package reproduce

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// rig is one project on the shared Gitea: an owner who files bug
// reports, and the reproduce bot (a write collaborator) the agent acts as.
type rig struct {
	t     testing.TB
	owner forgetest.User
	bot   forgetest.User
	repo  *forge.RepoClient // as the owner
	bot_  *forge.RepoClient // as the bot
	data  string
}

// newRig makes a project with its labels and a bot collaborator.
func newRig(t *testing.T) *rig {
	t.Helper()
	s := gitea.Get(t)
	p := s.NewProject(t, "bugs")
	bot := p.Dev
	return &rig{t: t, owner: p.Owner, bot: bot, repo: p.Repo,
		bot_: bot.Client.Repo(p.Repo.Owner(), p.Repo.Name()), data: sandboxtest.Dir(t, "reproduce")}
}

// agent builds the agent of the rig with runner r.
func (g *rig) agent(r Sidecars, now func() time.Time) *Agent {
	g.t.Helper()
	a, err := New(Options{
		Project: "bugs", Repo: g.repo.Slug(), Bot: g.bot.Login, Forge: g.bot_, Sidecars: r,
		Formulas: func(name string) (*formula.Formula, error) { return formula.Load(formulas.FS, name) },
		Secrets:  map[string]string{"ANTHROPIC_API_KEY": "sk-reproduce-test-key-77c1"},
		StateDir: filepath.Join(g.data, "state"), LockDir: filepath.Join(g.data, "locks"),
		Log: zerolog.New(zerolog.NewTestWriter(g.t)), Now: now,
	})
	if err != nil {
		g.t.Fatal(err)
	}
	return a
}

// ctx is a test context with a deadline.
func (g *rig) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	g.t.Cleanup(cancel)
	return ctx
}

// issue files a bug report as the owner with labels.
func (g *rig) issue(title, body string, labels ...forge.LabelName) forge.Issue {
	g.t.Helper()
	i, err := g.repo.CreateIssue(g.ctx(), forge.NewIssue{Title: title, Body: body, Labels: labels})
	if err != nil {
		g.t.Fatal(err)
	}
	return i
}

// labels is the label set of issue n, and its state.
func (g *rig) labels(n int64) (map[forge.LabelName]bool, forge.State) {
	g.t.Helper()
	i, err := g.repo.GetIssue(g.ctx(), n)
	if err != nil {
		g.t.Fatal(err)
	}
	out := map[forge.LabelName]bool{}
	for _, l := range i.Labels {
		out[l] = true
	}
	return out, i.State
}

// wantLabels fails unless issue n carries exactly want.
func (g *rig) wantLabels(n int64, want ...forge.LabelName) {
	g.t.Helper()
	got, _ := g.labels(n)
	if len(got) != len(want) {
		g.t.Errorf("#%d labels %v, want %v", n, got, want)
		return
	}
	for _, w := range want {
		if !got[w] {
			g.t.Errorf("#%d labels %v, want %v", n, got, want)
			return
		}
	}
}

// comments are the bodies of issue n's comments.
func (g *rig) comments(n int64) []string {
	g.t.Helper()
	cs, err := g.repo.ListComments(g.ctx(), n)
	if err != nil {
		g.t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.Body)
	}
	return out
}

// fixesOf lists the open and closed issues the bot filed for parent.
func (g *rig) fixesOf(parent int64) []forge.Issue {
	g.t.Helper()
	all, err := g.repo.ListIssues(g.ctx(), forge.IssueQuery{State: forge.StateAll})
	if err != nil {
		g.t.Fatal(err)
	}
	var out []forge.Issue
	for _, i := range all {
		if fixParent(i, g.bot.Login) == parent {
			out = append(out, i)
		}
	}
	return out
}

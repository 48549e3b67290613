package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/agents/gardener"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// gardenerProc is one gardener process of e's project: its agent and
// runtime over a data dir that outlives it.
type gardenerProc struct {
	t    testing.TB
	rt   *agent.Runtime
	a    *gardener.Agent
	proj *config.Project
}

// startGardener starts a gardener acting as bot over data, as a
// (re)started daemon does.
func (e *devEnv) startGardener(bot forgetest.User, data string) *gardenerProc {
	t := e.t
	t.Helper()
	led, err := ledger.Open(filepath.Join(data, "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = led.Close() })
	g := &gardenerProc{t: t, rt: agent.New(agent.Options{Ledger: led, Log: zerolog.Nop()}),
		proj: &config.Project{Name: "proj", Repo: e.repo.Slug(), ForgeURL: e.srv.URL, PrimaryBranch: "main"}}
	fc, err := forge.New(forge.Options{URL: e.srv.URL, Token: bot.Token, User: bot.Login})
	if err != nil {
		t.Fatal(err)
	}
	repo := fc.Repo(e.repo.Owner(), e.repo.Name())
	sb, err := sandbox.New(sandbox.Options{Root: filepath.Join(data, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	f, err := formula.Load(formulas.FS, gardener.FormulaName)
	if err != nil {
		t.Fatal(err)
	}
	gt := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: e.srv.URL, Username: bot.Login, Password: bot.Password}})
	runner := formulaagent.NewRunner(formulaagent.Options{Role: "gardener", Project: "proj", Git: gt,
		URL: e.srv.URL + "/" + e.repo.Slug() + ".git", CloneDir: filepath.Join(data, "clone"), Primary: "main",
		Bot: bot.Login, Forge: repo, StateDir: filepath.Join(data, "state"), Formula: f,
		Claude: scriptedRunner(t, e.modelURL, data), Sandbox: sb, Timeout: 3 * time.Minute, Log: zerolog.Nop()})
	g.a = gardener.New(gardener.Options{Project: "proj", Primary: "main", Forge: repo, Driver: runner, Log: zerolog.Nop()})
	return g
}

func (g *gardenerProc) tick() { tickAndWait(g.t, g.rt, g.a, g.proj, config.RoleGardener) }

// gardenerJudges is the model of the gardener's session: issue n is ore.
func gardenerJudges(n int64) claudetest.Scenario {
	data, _ := json.Marshal(map[string]any{"issues": []map[string]any{{"issue": n, "kind": "ore", "reason": "behaviour",
		"acceptance_criteria": []string{"the file is read once"}, "affected_files": []string{"lib/env.sh"}}}})
	return claudetest.Scenario{Name: "gardener", Marker: "Judge the issues", Turns: []claudetest.Turn{
		claudetest.Tools(claudetest.Bash("cat > \"$DISINTO_GARDENER_PROPOSALS\" <<'JSON'\n" + string(data) + "\nJSON")),
		claudetest.Text("done")}}
}

// TestGardenerPullMergedByDevBot (spec 30 §14.4, §14.16): the gardener's
// pull request changes nothing before its merge; the dev bot merges it
// only once the review bot approved its head and CI is green, and never
// an approved chore pull request by someone else; a gardener process that
// died after opening the pull request is replaced by one that applies
// the manifest of the merge commit exactly once and marks the pull
// request.
func TestGardenerPullMergedByDevBot(t *testing.T) {
	e := newDevEnv(t)
	ctx := testCtx(t)
	bot := e.srv.NewUser(t, "gardener-bot")
	if err := e.repo.AddCollaborator(ctx, bot.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	if err := e.repo.CreateFiles(ctx, "main", "seed", []forge.NewFile{
		{Path: gardener.ManifestFile, Content: []byte("[]\n")}, {Path: "lib/env.sh", Content: []byte("#!/bin/sh\n")}}); err != nil {
		t.Fatal(err)
	}
	body := "The loader in lib/env.sh re-reads the file on every call."
	debt := e.issue("env.sh is a mess", body, forge.LabelTechDebt)
	if err := e.model.SetScenarios(gardenerJudges(debt)); err != nil {
		t.Fatal(err)
	}
	data := sandboxtest.Dir(t, "gardener")
	first := e.startGardener(bot, data)
	first.tick()
	var pr forge.PullRequest
	for _, p := range e.allPulls() {
		if strings.HasPrefix(p.Head, "chore/gardener-") {
			pr = p
		}
	}
	if pr.Number == 0 || !strings.EqualFold(pr.Author, bot.Login) {
		t.Fatalf("no gardener pull request by %s: %+v", bot.Login, pr)
	}
	// The first gardener process is gone from here on.
	if i := e.getIssue(debt); i.Body != body || i.HasLabel(forge.LabelBacklog) {
		t.Fatal("the manifest took effect before the merge")
	}

	// A look-alike chore pull request by the owner, approved and green.
	clone := e.ownerClone("")
	e.commitPush(clone, "chore/gardener-20990101-0000", map[string]string{"fake.md": "x\n"})
	fake, err := e.repo.CreatePull(ctx, forge.NewPull{Title: gardener.Title, Head: "chore/gardener-20990101-0000", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	e.ci(fake, forge.CISuccess, "green")
	e.review(fake, forge.ReviewApprove, "ok")

	d := e.newBot("dev-bot")
	d.rebuild(func(o *dev.Options) { o.ChoreBots = map[string]string{"gardener": bot.Login} })
	e.ci(pr, forge.CISuccess, "green")
	d.tick()
	if e.pull(pr.Number).Merged {
		t.Fatal("merged without an approval")
	}
	e.review(pr, forge.ReviewApprove, "ok")
	d.tick()
	merged := e.pull(pr.Number)
	if !merged.Merged || merged.MergedSHA == "" {
		t.Fatal("the dev bot did not merge the approved, green gardener pull request")
	}
	if e.pull(fake.Number).Merged {
		t.Error("the dev bot merged a chore pull request the gardener bot did not open")
	}

	second := e.startGardener(bot, data)
	second.tick()
	second.tick()
	i := e.getIssue(debt)
	if !i.HasLabel(forge.LabelBacklog) || i.HasLabel(forge.LabelTechDebt) || !strings.HasPrefix(i.Body, body) ||
		!strings.Contains(i.Body, "## Affected files") {
		t.Errorf("after the merge: labels %v body:\n%s", i.Labels, i.Body)
	}
	marker := forge.RefMarker(forge.RefGardenerManifest, merged.MergedSHA)
	cs, err := e.repo.ListComments(ctx, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cs {
		if strings.Contains(c.Body, marker) && strings.EqualFold(c.Author, bot.Login) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d comments with %s on the pull request, want 1", n, marker)
	}
	if c := strings.Count(i.Body, "## Acceptance criteria"); c != 1 {
		t.Errorf("the body was enriched %d times", c)
	}
}

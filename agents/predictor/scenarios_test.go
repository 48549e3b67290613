package predictor

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
)

// noWorkItems (spec 40 §3.8.6): every issue the predictor bot authored is
// a prediction and carries no work label.
func noWorkItems(t *testing.T, r *rig) {
	t.Helper()
	for _, i := range r.ByBot() {
		for _, l := range []forge.LabelName{forge.LabelBacklog, forge.LabelVision, forge.LabelAction} {
			if i.HasLabel(l) {
				t.Errorf("#%d by the predictor carries %s", i.Number, l)
			}
		}
		if i.State == forge.StateOpen && !i.HasLabel(forge.LabelPredictionUnreviewed) {
			t.Errorf("open #%d by the predictor is not a prediction: %v", i.Number, i.Labels)
		}
	}
}

// launchTree is a tree whose DONE objective has no evidence behind it.
func launchTree(r *rig) {
	r.ops["prerequisites.md"] = &fstest.MapFile{Data: []byte("# Prerequisite Tree\n\n## Objective: Launch\n- [x] Site live\nStatus: DONE\n")}
	r.ops["RESOURCES.md"] = &fstest.MapFile{Data: []byte("# Resources\n\n- a forge\n")}
}

// TestExplore (§3.8.1): one explore proposal on a DONE objective without
// evidence files one prediction/unreviewed issue in the protocol's shape;
// the session saw the tree and an empty evidence inventory.
func TestExplore(t *testing.T) {
	r := newRig(t, map[string]string{"VISION.md": "# Vision\n\nLaunch.\n"})
	launchTree(r)
	r.script(explore("Launch is marked DONE without evidence", "The launch objective is done on paper only"))
	r.mustTick()
	mine := r.ByBot()
	if len(mine) != 1 {
		t.Fatalf("%d issues by the predictor, want 1", len(mine))
	}
	i := mine[0]
	if i.State != forge.StateOpen || len(i.Labels) != 1 || !i.HasLabel(forge.LabelPredictionUnreviewed) {
		t.Errorf("prediction state %s labels %v", i.State, i.Labels)
	}
	for _, want := range []string{"\n---\n**Theory:** ", "**Confidence:** low\n", "**Evidence checked:** ", "**Suggested action:** "} {
		if !strings.Contains(i.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, i.Body)
		}
	}
	p := r.Prompt()
	for _, want := range []string{"## Objective: Launch", "evidence/red-team: 0 files", "Launch.", "5 points", "run-gardener"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if rec := r.LastRecord(); !strings.Contains(rec, fmt.Sprintf("filed #%d (explore)", i.Number)) {
		t.Errorf("record %q", rec)
	}
	noWorkItems(t, r)
}

// TestExploitAndBudget (§3.8.2, §3.8.4): an exploit of a factory formula
// (the fixture run-red-team) files its prediction and one typed vault request
// predict-<P>-run-red-team with no secrets, and costs two points: of the
// three explores after it, two are filed and the third is over budget.
func TestExploitAndBudget(t *testing.T) {
	r := newRig(t, nil)
	launchTree(r)
	r.script(exploit("The launch claim breaks under attack", "the site falls over under a red-team run", "run-red-team"),
		explore("Alpha weakness", "alpha subsystem lacks monitoring entirely"),
		explore("Beta weakness", "beta deployment depends on one maintainer"),
		explore("Gamma weakness", "gamma backups were never restored once"),
		explore("Delta weakness", "delta credentials rotate manually yearly"))
	r.mustTick()
	mine := r.ByBot()
	var titles []string
	for _, i := range mine {
		titles = append(titles, i.Title)
	}
	if got := strings.Join(titles, "|"); got != "The launch claim breaks under attack|Alpha weakness|Beta weakness|Gamma weakness" {
		t.Fatalf("filed %q", got)
	}
	p := mine[0]
	if len(r.vault.reqs) != 1 {
		t.Fatalf("%d vault requests", len(r.vault.reqs))
	}
	q := r.vault.reqs[0]
	if q.ID != fmt.Sprintf("predict-%d-run-red-team", p.Number) || q.Formula != "run-red-team" || q.Secrets == nil || len(q.Secrets) != 0 ||
		!strings.HasPrefix(q.Context, fmt.Sprintf("Test prediction #%d: ", p.Number)) {
		t.Errorf("vault request %+v", q)
	}
	if !strings.Contains(p.Body, "**Confidence:** high") || !strings.Contains(p.Body, "`run-red-team`") {
		t.Errorf("exploit body:\n%s", p.Body)
	}
	rec := r.LastRecord()
	if !strings.Contains(rec, "predict.over_budget") || !strings.Contains(rec, "Delta weakness") ||
		!strings.Contains(rec, fmt.Sprintf("filed #%d (exploit), vault pull request #101", p.Number)) {
		t.Errorf("record %q", rec)
	}
	noWorkItems(t, r)
}

// TestBudgetTwoExploits (§3.8.4): two exploits and two explores (cost 6)
// file the first three in order (cost 5); the last is over budget.
func TestBudgetTwoExploits(t *testing.T) {
	r := newRig(t, nil)
	r.script(exploit("First exploit", "first theory about caching layers", "run-gardener"),
		exploit("Second exploit", "second theory about queue overflow", "run-gardener"),
		explore("Third explore", "third theory about log rotation"),
		explore("Fourth explore", "fourth theory about certificate expiry"))
	r.mustTick()
	var titles []string
	for _, i := range r.ByBot() {
		titles = append(titles, i.Title)
	}
	if got := strings.Join(titles, "|"); got != "First exploit|Second exploit|Third explore" {
		t.Fatalf("filed %q", got)
	}
	if len(r.vault.reqs) != 2 {
		t.Errorf("%d vault requests", len(r.vault.reqs))
	}
	if rec := r.LastRecord(); !strings.HasPrefix(rec, "predict.over_budget") || !strings.Contains(rec, "Fourth explore") {
		t.Errorf("record %q", rec)
	}
}

// TestUnknownFormula (§3.8.3): an exploit naming a formula that does not
// exist makes no vault request and files nothing; the run records
// vault.invalid_formula.
func TestUnknownFormula(t *testing.T) {
	r := newRig(t, nil)
	r.script(exploit("Exploit of nothing", "a theory needing a missing formula", "run-nonexistent"))
	r.mustTick()
	if n := len(r.ByBot()); n != 0 {
		t.Errorf("%d issues filed", n)
	}
	if len(r.vault.reqs) != 0 {
		t.Errorf("vault requests %+v", r.vault.reqs)
	}
	if rec := r.LastRecord(); !strings.HasPrefix(rec, "vault.invalid_formula |") || !strings.Contains(rec, "run-nonexistent") {
		t.Errorf("record %q", rec)
	}
}

// TestDedup (§3.8.5): with an open prediction "Evidence for launch
// objective is thin", the same title (worded differently) and the same
// theory under another title are both dropped.
func TestDedup(t *testing.T) {
	r := newRig(t, nil)
	open := r.Issue("Evidence for launch objective is thin",
		"Seen.\n\n---\n**Theory:** The launch objective rests on no evidence files at all\n**Confidence:** low\n",
		forge.LabelPredictionUnreviewed)
	r.script(explore("evidence for Launch objective is thin!", "something else entirely about disks"),
		explore("Launch has nothing behind it", "The launch objective rests on no evidence files at all"))
	r.mustTick()
	if n := len(r.ByBot()); n != 0 {
		t.Errorf("%d duplicates filed", n)
	}
	if rec := r.LastRecord(); !strings.HasPrefix(rec, "predict.duplicate") || strings.Count(rec, fmt.Sprintf("#%d holds", open.Number)) != 2 {
		t.Errorf("record %q", rec)
	}
}

// TestDismissedNeedsNewEvidence (§3.7.1): a dismissed theory proposed
// again without naming the dismissed issue is refused; naming it with new
// evidence files it, with the reference and a **New evidence:** line.
func TestDismissedNeedsNewEvidence(t *testing.T) {
	r := newRig(t, nil)
	d := r.Issue("Backups are never restored", "Seen.\n\n---\n**Theory:** nobody ever restored a backup of the database\n",
		forge.LabelPredictionDismissed)
	if err := r.Repo.CloseIssue(ctxOf(t), d.Number); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Repo.CreateComment(ctxOf(t), d.Number, "Dismissed: restores are tested monthly."); err != nil {
		t.Fatal(err)
	}
	r.script(explore("Restores untested", "nobody ever restored a backup of the database"))
	r.mustTick()
	if n := len(r.ByBot()); n != 0 {
		t.Fatalf("a dismissed theory without new evidence was filed")
	}
	if rec := r.LastRecord(); !strings.HasPrefix(rec, "predict.no_new_evidence") {
		t.Errorf("record %q", rec)
	}
	if p := r.Prompt(); !strings.Contains(p, "restores are tested monthly") {
		t.Error("the planner's reasoning did not reach the session")
	}
	again := explore("Restores untested", "nobody ever restored a backup of the database")
	again.Dismissed, again.NewEvidence = d.Number, "the restore job has failed since March"
	r.script(again)
	r.Now = r.Now.Add(24 * 3600e9)
	if _, err := r.Repo.CreateComment(ctxOf(t), d.Number, "poke"); err != nil { // an issue update: the run does not skip
		t.Fatal(err)
	}
	r.mustTick()
	mine := r.ByBot()
	if len(mine) != 1 {
		t.Fatalf("%d filed", len(mine))
	}
	if b := mine[0].Body; !strings.Contains(b, fmt.Sprintf("#%d", d.Number)) || !strings.Contains(b, "\n**New evidence:** the restore job has failed since March") {
		t.Errorf("body:\n%s", b)
	}
}

// TestSupersede (§3.8.7): superseding the predictor's own #P with a new
// prediction #Q closes #P with a comment naming #Q; its labels change one
// at a time (prediction/dismissed in, prediction/unreviewed out) and any
// other label stays.
func TestSupersede(t *testing.T) {
	r := newRig(t, nil)
	old, err := r.BotRepo.CreateIssue(ctxOf(t), forge.NewIssue{Title: "Old theory", Body: "Seen.\n\n---\n**Theory:** the old theory of queue loss\n",
		Labels: []forge.LabelName{forge.LabelPredictionUnreviewed, forge.LabelInProgress}})
	if err != nil {
		t.Fatal(err)
	}
	p := explore("Sharper theory", "queue loss happens on every restart of the broker")
	p.Supersedes = old.Number
	r.script(p)
	r.mustTick()
	mine := r.ByBot()
	if len(mine) != 2 {
		t.Fatalf("%d issues by the predictor", len(mine))
	}
	q := mine[1]
	got := r.Get(old.Number)
	if got.State != forge.StateClosed || got.HasLabel(forge.LabelPredictionUnreviewed) ||
		!got.HasLabel(forge.LabelPredictionDismissed) || !got.HasLabel(forge.LabelInProgress) {
		t.Errorf("superseded #%d: %s %v", old.Number, got.State, got.Labels)
	}
	cs, err := r.Repo.ListComments(ctxOf(t), old.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || !strings.Contains(cs[0].Body, fmt.Sprintf("#%d", q.Number)) {
		t.Errorf("comments %+v", cs)
	}
	if !strings.Contains(q.Body, fmt.Sprintf("**Supersedes:** #%d", old.Number)) {
		t.Errorf("new body:\n%s", q.Body)
	}
	noWorkItems(t, r)
}

// TestSupersedeNotOwn: a proposal naming someone else's prediction files
// the new one and closes nothing.
func TestSupersedeNotOwn(t *testing.T) {
	r := newRig(t, nil)
	theirs := r.Issue("A human's theory", "Seen.\n\n---\n**Theory:** humans theorise too\n", forge.LabelPredictionUnreviewed)
	p := explore("Mine", "my own unrelated theory about disk quotas")
	p.Supersedes = theirs.Number
	r.script(p)
	r.mustTick()
	if got := r.Get(theirs.Number); got.State != forge.StateOpen || !got.HasLabel(forge.LabelPredictionUnreviewed) {
		t.Errorf("someone else's prediction was touched: %s %v", got.State, got.Labels)
	}
	if n := len(r.ByBot()); n != 1 {
		t.Errorf("%d filed", n)
	}
}

// TestGate (§3.8.8): with the predictor paused, nothing runs and the
// skip is logged.
func TestGate(t *testing.T) {
	r := newRig(t, nil)
	r.enable = agent.NewEnablement(filepath.Join(r.Data, "enable.json"), nil)
	if err := r.enable.Pause(config.RolePredictor, r.Project.Name); err != nil {
		t.Fatal(err)
	}
	r.build()
	r.script(explore("Never", "never filed"))
	if err := r.tick(); !errors.Is(err, agent.ErrPaused) {
		t.Fatalf("tick: %v", err)
	}
	if r.Sessions() != 0 || len(r.ByBot()) != 0 {
		t.Error("a paused predictor ran")
	}
	if !strings.Contains(r.Logs.String(), "paused") {
		t.Errorf("the skip is not logged: %s", r.Logs.String())
	}
}

// TestSkipWhenUnchanged (§3.7.4): a run that filed nothing on an
// unchanged project is followed by runs that ask the model nothing and
// cost at most five forge requests; a run that filed is followed by one
// more run (which files no duplicate), and a moved ops repository counts
// as a change.
func TestSkipWhenUnchanged(t *testing.T) {
	r := newRig(t, nil)
	r.script(explore("Something", "something about the scheduler starving"))
	r.mustTick()
	if n := len(r.ByBot()); n != 1 {
		t.Fatalf("%d filed", n)
	}
	models := r.Sessions()
	r.mustTick() // the last run filed: look again
	if r.Sessions() == models {
		t.Fatal("the run after a filing run did not look again")
	}
	if n := len(r.ByBot()); n != 1 {
		t.Fatalf("the second run filed a duplicate: %d", n)
	}
	models = r.Sessions()
	r.Proxy.Reset()
	r.mustTick()
	if got := r.Proxy.Total(); got > 5 {
		t.Errorf("an unchanged run made %d forge requests (%v)", got, r.Proxy.Counts())
	}
	if r.Sessions() != models {
		t.Errorf("an unchanged run asked the model")
	}
	r.opsHead = "ops2"
	r.mustTick()
	if r.Sessions() == models {
		t.Error("a moved ops repository did not count as a change")
	}
}

// TestRefusedOutbox: an outbox that is not the schema files nothing and
// says so.
func TestRefusedOutbox(t *testing.T) {
	r := newRig(t, nil)
	r.scriptRaw(`{"proposals": [{"kind": "explore", "title": "x", "labels": ["backlog"]}]}`)
	r.mustTick()
	if n := len(r.ByBot()); n != 0 {
		t.Errorf("%d filed", n)
	}
	if rec := r.LastRecord(); !strings.Contains(rec, "proposals refused") {
		t.Errorf("record %q", rec)
	}
}

// TestFailedSessionRetries: a session the model backend refuses fails
// the run and leaves no watermark, so the next run, with nothing changed
// on the forge, judges again and files.
func TestFailedSessionRetries(t *testing.T) {
	r := newRig(t, nil)
	if err := r.Model.SetScenarios(claudetest.Scenario{Name: "predictor", Default: true,
		Turns: []claudetest.Turn{{Status: 400}}}); err != nil {
		t.Fatal(err)
	}
	if err := r.tick(); err == nil {
		t.Fatal("a refused session did not fail the run")
	}
	if n := len(r.ByBot()); n != 0 {
		t.Fatalf("%d filed after a failed session", n)
	}
	r.script(explore("After the failure", "a theory about the backend refusing keys"))
	r.mustTick()
	if n := len(r.ByBot()); n != 1 {
		t.Fatalf("the run after a failed session filed %d", n)
	}
}

// TestVaultRefused: a vault that refuses an exploit's request leaves its
// prediction filed, the rest of the run goes on, and the run records
// vault.refused.
func TestVaultRefused(t *testing.T) {
	r := newRig(t, nil)
	r.vault.refuse = errors.New("formula run-red-team: not found")
	r.script(exploit("Refused exploit", "a theory the vault will not test", "run-red-team"),
		explore("Next one", "an unrelated theory about timeouts"))
	r.mustTick()
	if n := len(r.ByBot()); n != 2 {
		t.Fatalf("%d filed", n)
	}
	if rec := r.LastRecord(); !strings.HasPrefix(rec, "vault.refused |") || !strings.Contains(rec, "not found") {
		t.Errorf("record %q", rec)
	}
}

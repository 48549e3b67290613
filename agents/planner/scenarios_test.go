package planner

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/graph"
)

// TestSkipUnchanged is spec 40 §2.10 scenario 1 and the skip rule of
// §2.9.1: after a run, nothing changed (its own issues, labels and ops
// commit excluded), so the next run asks the model nothing; a change by
// someone else runs it again.
func TestSkipUnchanged(t *testing.T) {
	r := newRig(t, nil, nil)
	r.script(Plan{Tree: launchTree(Prereq{Text: "Metrics wired", Ref: "m"}), Issues: []Proposal{backlog("m", "Wire the metrics")},
		Priority: []IssueRef{{Ref: "m"}}})
	r.mustTick()
	if r.Sessions() == 0 || len(r.openByBot()) != 1 {
		t.Fatalf("first run: %d model requests, %d issues", r.Sessions(), len(r.openByBot()))
	}
	models := r.Sessions()
	r.Now = r.Now.Add(12 * time.Hour)
	r.mustTick()
	if r.Sessions() != models {
		t.Fatalf("an unchanged project (the planner's own changes only) asked the model again")
	}
	r.Issue("a human files something", "text")
	r.Now = r.Now.Add(12 * time.Hour)
	r.mustTick()
	if r.Sessions() == models {
		t.Fatal("a new issue did not run the planner")
	}
	models = r.Sessions()
	if _, err := r.opsRepo.PutFile(ctxOf(t), forge.FileChange{Path: "RESOURCES.md", Content: []byte("# Resources\n\n- a VPS\n"),
		Message: "a human adds a resource", Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	r.Now = r.Now.Add(12 * time.Hour)
	r.mustTick()
	if r.Sessions() == models {
		t.Fatal("a human's ops commit did not run the planner")
	}
}

// TestRunOnPrediction is scenario 2: an open prediction runs the planner
// with the opus model, and the prompt carries the tree, RESOURCES.md and
// the structural analysis.
func TestRunOnPrediction(t *testing.T) {
	r := newRig(t, nil, map[string]string{
		graph.DefaultTreePath: "# Prerequisite Tree\n\n## Objective: Launch\n- [ ] Site live\nStatus: BLOCKED — site\n",
		"RESOURCES.md":        "# Resources\n\n- a forge named anvil\n",
	})
	r.Issue("Evidence for launch is thin", "Seen.\n\n---\n**Theory:** thin\n", forge.LabelPredictionUnreviewed)
	r.scriptRaw(`{}`)
	r.mustTick()
	reqs := r.Model.MessageRequests("")
	if len(reqs) == 0 {
		t.Fatal("the model was not asked")
	}
	if m, _ := reqs[0].Body["model"].(string); !strings.Contains(m, "opus") {
		t.Errorf("model %q, want opus", m)
	}
	p := r.Prompt()
	for _, want := range []string{"## Objective: Launch", "- [ ] Site live", "a forge named anvil", "## Structural analysis",
		"Evidence for launch is thin", "Issue budget"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
}

// TestTriage is scenarios 3 and 4, and a relabel that keeps in-progress:
// an actioned prediction gets its follow-up issue in the backlog shape,
// prediction/actioned for prediction/unreviewed, a reasoning comment,
// and is closed; a dismissed one likewise with prediction/dismissed and
// no follow-up; every other label stays.
func TestTriage(t *testing.T) {
	r := newRig(t, nil, nil)
	p := r.Issue("Metrics are missing", "Seen.\n\n---\n**Theory:** no metrics\n", forge.LabelPredictionUnreviewed, forge.LabelInProgress)
	q := r.Issue("The moon is cheese", "Seen.\n\n---\n**Theory:** cheese\n", forge.LabelPredictionUnreviewed)
	r.script(Plan{
		Triage: []Triage{{Prediction: p.Number, Decision: Action, Reasoning: "Agreed: nothing measures the launch.", FollowUp: "m"},
			{Prediction: q.Number, Decision: Dismiss, Reasoning: "Noise: no evidence at all."}},
		Issues: []Proposal{backlog("m", "Wire the metrics")},
	})
	r.mustTick()
	filed := r.openByBot()
	if len(filed) != 1 {
		t.Fatalf("%d issues filed", len(filed))
	}
	f := filed[0]
	if !f.HasLabel(forge.LabelBacklog) || !hasAll(f.Body, "## Problem", "## Proposed solution", "## Affected files", "## Acceptance criteria",
		"- [ ] CI is green", fmt.Sprintf("Follows prediction #%d", p.Number)) {
		t.Errorf("follow-up %v:\n%s", f.Labels, f.Body)
	}
	gp := r.Get(p.Number)
	if gp.State != forge.StateClosed || !gp.HasLabel(forge.LabelPredictionActioned) || gp.HasLabel(forge.LabelPredictionUnreviewed) {
		t.Errorf("actioned prediction: %s %v", gp.State, gp.Labels)
	}
	if !gp.HasLabel(forge.LabelInProgress) {
		t.Errorf("the relabel dropped in-progress: %v", gp.Labels)
	}
	if cs := r.Comments(p.Number); len(cs) != 1 || !hasAll(cs[0].Body, "actioned", fmt.Sprintf("#%d", f.Number), "nothing measures") ||
		!strings.EqualFold(cs[0].Author, r.Bot.Login) {
		t.Errorf("actioned comments %+v", cs)
	}
	gq := r.Get(q.Number)
	if gq.State != forge.StateClosed || !gq.HasLabel(forge.LabelPredictionDismissed) || gq.HasLabel(forge.LabelPredictionUnreviewed) {
		t.Errorf("dismissed prediction: %s %v", gq.State, gq.Labels)
	}
	if cs := r.Comments(q.Number); len(cs) != 1 || !strings.Contains(cs[0].Body, "no evidence") {
		t.Errorf("dismissed comments %+v", cs)
	}
	for _, i := range r.ByBot() {
		if strings.Contains(i.Body, fmt.Sprintf("#%d", q.Number)) {
			t.Errorf("#%d references the dismissed prediction", i.Number)
		}
	}
}

// TestBudgetTwoTriaged is scenario 5 under the monotonic budget: two
// predictions triaged and five issues proposed leave max(4, 2+1) = 4
// filed (the reference's 2+1 = 3 would make triage cost issues), the
// follow-up first, and the run's record says why the fifth was not.
func TestBudgetTwoTriaged(t *testing.T) {
	r := newRig(t, nil, nil)
	p1 := r.Issue("Prediction one", "x", forge.LabelPredictionUnreviewed)
	p2 := r.Issue("Prediction two", "y", forge.LabelPredictionUnreviewed)
	var issues []Proposal
	for i := range 5 {
		issues = append(issues, backlog(fmt.Sprintf("i%d", i), fmt.Sprintf("Constraint number %d", i)))
	}
	r.script(Plan{Issues: issues, Triage: []Triage{{Prediction: p1.Number, Decision: Dismiss, Reasoning: "no"},
		{Prediction: p2.Number, Decision: Action, Reasoning: "yes", FollowUp: "i4"}}})
	r.mustTick()
	filed := r.openByBot()
	if len(filed) != 4 {
		t.Fatalf("%d issues filed, want max(4, 2+1) = 4", len(filed))
	}
	if filed[0].Title != "Constraint number 4" {
		t.Errorf("the follow-up was not filed first: %q", filed[0].Title)
	}
	if rec := r.LastRecord(); !hasAll(rec, string(CodeOverBudget), "budget of 4") {
		t.Errorf("record %q", rec)
	}
}

// TestBudgetNineOfFour: a model proposing nine issues with nothing to
// triage gets exactly four filed, and a comment on the last one says
// which five were not and why.
func TestBudgetNineOfFour(t *testing.T) {
	r := newRig(t, nil, nil)
	var issues []Proposal
	for i := range 9 {
		issues = append(issues, backlog(fmt.Sprintf("i%d", i), fmt.Sprintf("Constraint number %d", i)))
	}
	r.script(Plan{Issues: issues})
	r.mustTick()
	filed := r.openByBot()
	if len(filed) != 4 || len(r.ByBot()) != 4 {
		t.Fatalf("%d open, %d filed, want exactly 4", len(filed), len(r.ByBot()))
	}
	for i, f := range filed {
		if f.Title != fmt.Sprintf("Constraint number %d", i) {
			t.Errorf("filed %q in position %d: not in proposal order", f.Title, i)
		}
	}
	cs := r.Comments(filed[3].Number)
	if len(cs) != 1 || !hasAll(cs[0].Body, "budget of this run is 4", "5 more proposals were not filed",
		"Constraint number 4", "Constraint number 8") {
		t.Fatalf("no comment on why the rest were not filed: %+v", cs)
	}
	if rec := r.LastRecord(); !hasAll(rec, string(CodeOverBudget), "filed 4 of a budget of 4") {
		t.Errorf("record %q", rec)
	}
}

// TestExcessClosed: an issue the planner's identity opens while a run
// files its budget (not by the run) is closed with a comment, so the
// budget holds whatever acts as the planner bot.
func TestExcessClosed(t *testing.T) {
	r := newRig(t, nil, nil)
	var issues []Proposal
	for i := range 4 {
		issues = append(issues, backlog(fmt.Sprintf("i%d", i), fmt.Sprintf("Constraint number %d", i)))
	}
	r.script(Plan{Issues: issues})
	direct := r.BotClient(r.Srv.URL).Repo(r.Repo.Owner(), r.Repo.Name())
	var once sync.Once
	var stray forge.Issue
	r.Proxy.Observe(func(_ int, q *http.Request) {
		if q.Method == http.MethodPost && strings.HasSuffix(q.URL.Path, "/issues") {
			once.Do(func() {
				var err error
				stray, err = direct.CreateIssue(q.Context(), forge.NewIssue{Title: "Filed around the budget", Body: "x"})
				if err != nil {
					t.Error(err)
				}
			})
		}
	})
	r.mustTick()
	r.Proxy.Observe(nil)
	if stray.Number == 0 {
		t.Fatal("no stray issue was made")
	}
	got := r.Get(stray.Number)
	if got.State != forge.StateClosed {
		t.Fatalf("the issue beyond the budget is %s", got.State)
	}
	if cs := r.Comments(stray.Number); len(cs) != 1 || !strings.Contains(cs[0].Body, "issue budget is 4") {
		t.Errorf("comments %+v", cs)
	}
	if len(r.openByBot()) != 4 {
		t.Errorf("%d open issues of the planner", len(r.openByBot()))
	}
	if rec := r.LastRecord(); !strings.Contains(rec, string(CodeExcessClosed)) {
		t.Errorf("record %q", rec)
	}
}

// TestPrioritySync is scenario 6: the new top five carry priority (and
// keep backlog); the issue that dropped out loses priority only, keeping
// backlog and in-progress.
func TestPrioritySync(t *testing.T) {
	r := newRig(t, nil, nil)
	var nums []int64
	for i := range 5 {
		nums = append(nums, r.Issue(fmt.Sprintf("Work %d", i+1), "x", forge.LabelBacklog).Number)
	}
	six := r.Issue("Work 6", "x", forge.LabelBacklog, forge.LabelPriority, forge.LabelInProgress)
	var prio []IssueRef
	for _, n := range nums {
		prio = append(prio, IssueRef{Issue: n})
	}
	r.script(Plan{Priority: prio})
	r.mustTick()
	for _, n := range nums {
		if i := r.Get(n); !i.HasLabel(forge.LabelPriority) || !i.HasLabel(forge.LabelBacklog) {
			t.Errorf("#%d labels %v", n, i.Labels)
		}
	}
	g := r.Get(six.Number)
	if g.HasLabel(forge.LabelPriority) || !g.HasLabel(forge.LabelBacklog) || !g.HasLabel(forge.LabelInProgress) {
		t.Errorf("#%d labels %v: want backlog and in-progress, no priority", six.Number, g.Labels)
	}
}

// TestProcurement is scenario 7: a request for a human becomes
// vault/pending/<project>-<slug>.md with the six headings in the
// planner's ops pull request, and the tree marks the prerequisite
// blocked-on-vault; a slug already fired is not requested again.
func TestProcurement(t *testing.T) {
	r := newRig(t, nil, map[string]string{"vault/fired/proj-domain.md": "# Request: a domain\n"})
	blocker := r.Issue("Publish under the organisation", "x", forge.LabelBacklog)
	req := Procurement{Slug: "github-org", Title: "A GitHub organisation", What: "An organisation for the mirrors.",
		Why: "The launch objective needs public mirrors.", HumanAction: []string{"Create the organisation", "Invite mirror-bot"},
		FactoryWill: "Mirror the repositories.", Unblocks: []int64{blocker.Number}}
	fired := req
	fired.Slug = "domain"
	r.script(Plan{Tree: launchTree(Prereq{Text: "A GitHub organisation", Procurement: "github-org"}),
		Procurement: []Procurement{req, fired}})
	r.mustTick()
	path := ProcurementPath("proj", "github-org")
	var pr forge.PullRequest
	for _, p := range r.opsPulls() {
		if strings.HasPrefix(p.Head, "planner/run-2026-04-15-proj-planner-") && p.Title == "chore: planner run 2026-04-15: procurement requests" {
			pr = p
		}
	}
	if pr.Number == 0 {
		t.Fatalf("no planner pull request on the ops repository: %+v", r.opsPulls())
	}
	body, ok := r.opsFile(path, pr.HeadSHA)
	if !ok || !hasAll(body, "# Request: A GitHub organisation", "## What", "## Why", "## Human action", "## Factory will then",
		"## Unblocks", "1. Create the organisation", "3. Paste the result into the issue.",
		fmt.Sprintf("- #%d — Publish under the organisation", blocker.Number)) {
		t.Errorf("%s:\n%s", path, body)
	}
	if _, ok := r.opsFile(ProcurementPath("proj", "domain"), pr.HeadSHA); ok {
		t.Error("a request already fired was made again")
	}
	if _, ok := r.opsFile(path, "main"); ok {
		t.Error("the procurement request reached main without approval")
	}
	tree, _ := r.opsFile(graph.DefaultTreePath, "main")
	if !strings.Contains(tree, "- [ ] A GitHub organisation blocked-on-vault ("+path+")") {
		t.Errorf("tree:\n%s", tree)
	}
	if p, err := r.opsRepo.GetPull(ctxOf(t), pr.Number); err != nil || !slices.Contains(p.Labels, forge.LabelPendingApproval) {
		t.Errorf("pull request labels: %v %v", p.Labels, err)
	}
	// The request waits in its pull request: a later run asking again
	// proposes nothing new.
	r.Issue("news", "x")
	r.Now = r.Now.Add(12 * time.Hour)
	r.mustTick()
	if n := len(r.opsPulls()); n != 1 {
		t.Errorf("%d ops pull requests after a second run asking for the same request", n)
	}
	if !strings.Contains(r.Prompts()[1], "open pull requests/github-org") {
		t.Error("the second run's prompt does not list the request waiting in its pull request")
	}
}

// TestVisionGate is scenario 8: a constraint touching six files is filed
// as vision with a "## Why vision" section and no backlog label.
func TestVisionGate(t *testing.T) {
	r := newRig(t, nil, nil)
	p := backlog("big", "Rework the storage layer")
	p.AffectedFiles = []string{"a.go", "b.go", "c.go", "d.go", "e.go", "f.go"}
	p.Solution = "Either a log or a database."
	r.script(Plan{Issues: []Proposal{p}})
	r.mustTick()
	filed := r.openByBot()
	if len(filed) != 1 {
		t.Fatalf("%d filed", len(filed))
	}
	if i := filed[0]; !i.HasLabel(forge.LabelVision) || i.HasLabel(forge.LabelBacklog) || !hasAll(i.Body, "## Why vision", "touches 6 files") {
		t.Errorf("labels %v:\n%s", i.Labels, i.Body)
	}
}

// TestTreeCommitted: the tree goes to the ops repository's main directly,
// as the planner bot, the commit naming the run (the audit trail); it
// parses back with lib/graph's parser (scenario 11) and the graph sees
// its objectives.
func TestTreeCommitted(t *testing.T) {
	r := newRig(t, nil, nil)
	tree := &Tree{Objectives: []Objective{
		{Name: "Launch", Issue: 10, Status: "BLOCKED", Reason: "metrics", Prerequisites: []Prereq{{Text: "Site live", Done: true, Issue: 11},
			{Text: "Metrics wired", Ref: "m"}}},
		{Name: "Grow", Status: "READY", Prerequisites: []Prereq{{Text: "Docs written"}}},
	}}
	r.script(Plan{Tree: tree, Issues: []Proposal{backlog("m", "Wire the metrics")}})
	r.mustTick()
	text, ok := r.opsFile(graph.DefaultTreePath, "main")
	if !ok {
		t.Fatal("no tree on the ops repository's main")
	}
	m := r.openByBot()[0].Number
	if !hasAll(text, "# Prerequisite Tree", "<!-- Last updated: 2026-04-15 -->", "## Objective: Launch (#10)", "- [x] Site live (#11)",
		fmt.Sprintf("- [ ] Metrics wired (#%d)", m), "Status: BLOCKED — metrics", "## Objective: Grow", "Status: READY") {
		t.Errorf("tree:\n%s", text)
	}
	got := graph.ParseTree(text)
	if len(got) != 2 || got[0].Status != "BLOCKED" || got[1].Status != "READY" || len(got[0].Prereqs) != 2 ||
		!got[0].Prereqs[0].Done || got[0].Prereqs[1].Done || got[0].Issue != 10 {
		t.Errorf("parsed %+v", got)
	}
	log := r.opsLog()
	if !hasAll(log, r.Bot.Login, "planner: run proj-planner-") {
		t.Errorf("ops commit:\n%s", log)
	}
	for _, p := range r.opsPulls() {
		t.Errorf("an ops pull request for planner-owned files: #%d %s", p.Number, p.Title)
	}
	b, err := graph.Build(ctxOf(t), graph.Options{Ops: graph.RepoFiles(ctxOf(t), r.opsRepo, "main")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Graph.Node("objective:launch"); !ok {
		t.Error("the graph does not see the planner's tree")
	}
}

// TestProtectedOps is scenarios 9 and 12 on an ops repository whose main
// takes no direct push (the vault protection `disinto init` sets): the
// tree rides in a pull request from planner/run-<date>-<run id>-tree
// titled "chore: planner run <date>", nothing reaches main, and a second
// run the same day opens its own pull request and supersedes the first
// with a comment, without touching its commits.
func TestProtectedOps(t *testing.T) {
	r := newRig(t, nil, nil)
	if err := r.opsRepo.SetBranchProtection(ctxOf(t), forge.Protection{Branch: "main", RequiredApprovals: 1}); err != nil {
		t.Fatal(err)
	}
	head := r.opsHead()
	r.script(Plan{Tree: launchTree(Prereq{Text: "Site live"})})
	r.mustTick()
	pulls := r.opsPulls()
	if len(pulls) != 1 || pulls[0].Title != "chore: planner run 2026-04-15" ||
		!strings.HasPrefix(pulls[0].Head, "planner/run-2026-04-15-proj-planner-") || !strings.HasSuffix(pulls[0].Head, "-tree") {
		t.Fatalf("ops pull requests %+v", pulls)
	}
	first := pulls[0]
	if tree, ok := r.opsFile(graph.DefaultTreePath, first.HeadSHA); !ok || !strings.Contains(tree, "- [ ] Site live") {
		t.Errorf("the pull request does not carry the tree: %q", tree)
	}
	if r.opsHead() != head {
		t.Error("the planner pushed to the protected main")
	}
	if rep := r.a.Report(); len(rep.Items) != 1 || rep.Items[0].PR != first.Number {
		t.Errorf("report %+v", rep)
	}
	r.Issue("news", "x")
	r.Now = r.Now.Add(12 * time.Hour) // 20:07, the same day
	r.script(Plan{Tree: launchTree(Prereq{Text: "Site live", Done: true})})
	r.mustTick()
	pulls = r.opsPulls()
	if len(pulls) != 2 || pulls[0].Head == pulls[1].Head {
		t.Fatalf("second run's pull requests %+v", pulls)
	}
	var second forge.PullRequest
	for _, p := range pulls {
		if p.Number != first.Number {
			second = p
		}
	}
	again, err := r.opsRepo.GetPull(ctxOf(t), first.Number)
	if err != nil || again.HeadSHA != first.HeadSHA || again.State != forge.StateClosed {
		t.Errorf("the first pull request: %+v %v; want closed at its own head", again, err)
	}
	if cs, err := r.opsRepo.ListComments(ctxOf(t), first.Number); err != nil || len(cs) != 1 ||
		!strings.Contains(cs[0].Body, fmt.Sprintf("Superseded by #%d", second.Number)) {
		t.Errorf("comments on the superseded pull request: %+v", cs)
	}
	if tree, _ := r.opsFile(graph.DefaultTreePath, second.HeadSHA); !strings.Contains(tree, "- [x] Site live") {
		t.Errorf("second tree:\n%s", tree)
	}
	if r.opsHead() != head {
		t.Error("the planner pushed to the protected main")
	}
}

// TestNoOpsChanges is scenario 10: a plan that changes nothing in the ops
// repository makes no commit and no pull request, and the watermark
// moves (the next run, with nothing new, skips).
func TestNoOpsChanges(t *testing.T) {
	r := newRig(t, nil, nil)
	head := r.opsHead()
	r.scriptRaw(`{"triage": []}`)
	r.mustTick()
	if r.opsHead() != head || len(r.opsPulls()) != 0 {
		t.Fatal("an empty plan changed the ops repository")
	}
	models := r.Sessions()
	r.mustTick()
	if r.Sessions() != models {
		t.Error("the watermark did not move")
	}
}

// TestMemoryEveryFifthRun: the run counter drives the memory: written on
// the first run (none yet), ignored on runs 2 to 5, rewritten on run 6,
// each time with the run it summarises through.
func TestMemoryEveryFifthRun(t *testing.T) {
	r := newRig(t, nil, nil)
	for run := 1; run <= 6; run++ {
		r.script(Plan{Memory: fmt.Sprintf("Run %d: the constraint is metrics.", run)})
		r.mustTick()
		mem, _ := r.opsFile(MemoryPath, "main")
		switch run {
		case 1, 6:
			if !hasAll(mem, fmt.Sprintf("<!-- summarized-through-run: %d -->", run), fmt.Sprintf("Run %d:", run)) {
				t.Fatalf("run %d: memory\n%s", run, mem)
			}
		default:
			if !strings.Contains(mem, "Run 1:") {
				t.Fatalf("run %d rewrote the memory before it was due:\n%s", run, mem)
			}
			if p := r.Prompts(); !strings.Contains(p[len(p)-1], "The memory is not due") {
				t.Errorf("run %d: the prompt does not say the memory is not due", run)
			}
		}
		r.Issue(fmt.Sprintf("news %d", run), "x") // the next run has something to look at
		r.Now = r.Now.Add(12 * time.Hour)
	}
}

// TestUnknownField: a plan with a key the schema does not know is
// refused whole, with a one-line reason naming the file and the field;
// nothing is filed.
func TestUnknownField(t *testing.T) {
	r := newRig(t, nil, nil)
	r.scriptRaw(`{"issues": [], "labels_to_replace": ["backlog"]}`)
	r.mustTick()
	if len(r.ByBot()) != 0 {
		t.Fatal("a refused plan filed")
	}
	if rec := r.LastRecord(); !hasAll(rec, "plan.json", "invalid plan", `unknown field "labels_to_replace"`) {
		t.Errorf("record %q", rec)
	}
}

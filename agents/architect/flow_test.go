package architect

import (
	"fmt"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// pitched pitches a vision issue for each title in one run and returns
// them with their sprint pull requests.
func (r *rig) pitched(titles ...string) ([]forge.Issue, []forge.PullRequest) {
	r.t.Helper()
	var vs []forge.Issue
	var ss []claudetest.Scenario
	for _, title := range titles {
		v := r.vision(title, "Why: "+title+".")
		vs = append(vs, v)
		ss = append(ss, pitchScenario(v.Number, title))
	}
	r.script(ss...)
	r.mustTick()
	var prs []forge.PullRequest
	for _, v := range vs {
		prs = append(prs, r.mustSprint(v.Number))
	}
	return vs, prs
}

// approve submits a formal review of u on pr's head.
func (r *rig) review(u forgetest.User, pr forge.PullRequest, ev forge.ReviewEvent, body string) {
	r.t.Helper()
	if _, err := u.Client.Repo(r.opsRepo.Owner(), r.opsRepo.Name()).CreateReview(ctxOf(r.t), pr.Number,
		forge.NewReview{Event: ev, Body: body, CommitID: pr.HeadSHA}); err != nil {
		r.t.Fatal(err)
	}
}

// status returns the merge check on pr's current head.
func (r *rig) status(pr int64) forge.CommitStatus {
	r.t.Helper()
	p, err := r.opsRepo.GetPull(ctxOf(r.t), pr)
	if err != nil {
		r.t.Fatal(err)
	}
	cs, err := r.opsRepo.CombinedStatus(ctxOf(r.t), p.HeadSHA)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, s := range cs.Statuses {
		if s.Context == StatusContext {
			return s
		}
	}
	return forge.CommitStatus{}
}

func (r *rig) file(pr forge.PullRequest, slug string) string {
	r.t.Helper()
	f, err := r.opsRepo.GetFile(ctxOf(r.t), "sprints/"+slug+".md", pr.Head)
	if err != nil {
		r.t.Fatal(err)
	}
	return string(f.Content)
}

// botComments returns the architect's comments on an ops pull request.
func (r *rig) botComments(pr int64) []forge.Comment {
	var out []forge.Comment
	for _, c := range r.opsComments(pr) {
		if c.Author == r.bot.Login {
			out = append(out, c)
		}
	}
	return out
}

func (r *rig) stage(pr int64) string {
	for _, it := range r.a.Report().Items {
		if it.PR == pr {
			return strings.TrimPrefix(it.Stage, "sprint ")
		}
	}
	return ""
}

// TestAcceptQuestionsAnswers (§3.12.5, §3.12.6, W-AR-2, W-AR-3,
// W-AR-6): an approval by the human starts exactly one questions
// session, which resumes the pitch's conversation and is told the pull
// request; its Q1 is posted and its document, with design forks, is
// committed to the file and mirrored into the body. The next run waits.
// The human's answer resumes the same conversation with the answer text,
// the sprint becomes ready to merge, and the merge check stays green
// until a human edits the body away from the file.
func TestAcceptQuestionsAnswers(t *testing.T) {
	r := newRig(t)
	vs, prs := r.pitched("Add billing")
	v, pr := vs[0], prs[0]
	r.mustTick() // sees its own writes; from here on the runs are unchanged
	r.review(r.human, pr, forge.ReviewApprove, "")
	forks := "\n## Design forks\n- Q1: Stripe or Paddle?\n"
	questions := scenario("questions", followUpMarker(ModeQuestions, pr.Number), 2,
		writeOutbox(sprintDoc(v.Number, "Add billing", forks), `{"comments": ["Q1: Stripe or Paddle?"], "ready": false}`))
	r.script(questions, pitchScenario(v.Number, "Add billing"))
	before := r.sessions()
	r.mustTick()
	qs := r.requests("questions")
	if len(qs) != 2 || r.sessions()-before != 2 {
		t.Fatalf("%d questions requests, %d model requests in all (want one two-turn session)", len(qs), r.sessions()-before)
	}
	if p := strings.Join(qs[0].Texts, "\n"); !strings.Contains(p, fmt.Sprintf("#%d", pr.Number)) || !strings.Contains(p, "Why: Add billing.") {
		t.Errorf("questions prompt lacks the pull request or the pitch's conversation")
	}
	bc := r.botComments(pr.Number)
	if len(bc) != 3 || !strings.Contains(bc[1].Body, "Accepted by @"+r.human.Login) || !strings.HasPrefix(bc[2].Body, "Q1: Stripe or Paddle?") {
		t.Fatalf("architect's comments %+v", bc)
	}
	if _, ok := forge.FindMarker(bc[1].Body, forge.MarkerSprintDecision); !ok {
		t.Errorf("acknowledgement without its decision marker: %q", bc[1].Body)
	}
	pr = r.mustSprint(v.Number)
	if f := r.file(pr, "add-billing"); !strings.Contains(f, "## Design forks") || pr.Body != mirror([]byte(f), sprintID{v.Number, "add-billing", pr.Head}) {
		t.Errorf("file and body after the questions:\n%s\n---\n%s", f, pr.Body)
	}
	if s := r.status(pr.Number); s.State != forge.CISuccess {
		t.Errorf("merge check %+v", s)
	}
	models := r.sessions()
	r.mustTick()
	r.mustTick()
	if r.sessions() != models || r.stage(pr.Number) != string(StageAwaitingAnswers) {
		t.Fatalf("waiting runs: %d model requests, stage %q", r.sessions()-models, r.stage(pr.Number))
	}

	r.say(r.human, pr.Number, "Stripe, we already have an account.")
	answers := scenario("answers", followUpMarker(ModeAnswers, pr.Number), 4,
		writeOutbox(sprintDoc(v.Number, "Add billing", "\n## Design forks\n- Q1: Stripe or Paddle? Stripe.\n"), `{"comments": ["Ready to merge."], "ready": true}`))
	r.script(answers, questions, pitchScenario(v.Number, "Add billing"))
	r.mustTick()
	as := r.requests("answers")
	if len(as) != 2 {
		t.Fatalf("%d answers requests (the session was not resumed?)", len(as))
	}
	if p := strings.Join(as[0].Texts, "\n"); !strings.Contains(p, "Stripe, we already have an account.") {
		t.Errorf("answers prompt lacks the answer")
	}
	pr = r.mustSprint(v.Number)
	if f := r.file(pr, "add-billing"); !strings.Contains(f, "Stripe.") || pr.Body != mirror([]byte(f), sprintID{v.Number, "add-billing", pr.Head}) {
		t.Errorf("file and body after the answers:\n%s", f)
	}
	if r.stage(pr.Number) != string(StageReady) {
		t.Errorf("stage %q, want %q", r.stage(pr.Number), StageReady)
	}
	if s := r.status(pr.Number); s.State != forge.CISuccess {
		t.Errorf("merge check %+v", s)
	}

	edited := pr.Body + "\nA human's aside."
	if _, err := r.opsRepo.EditIssue(ctxOf(t), pr.Number, forge.IssueEdit{Body: &edited}); err != nil {
		t.Fatal(err)
	}
	models = r.sessions()
	r.mustTick()
	if s := r.status(pr.Number); s.State != forge.CIFailure || !strings.Contains(s.Description, "authoritative") {
		t.Errorf("merge check after the body drifted: %+v", s)
	}
	if r.sessions() != models {
		t.Errorf("%d model requests for a body edit", r.sessions()-models)
	}
}

// TestRejection (§3.12.8, W-AR-4, W-AR-5): the human's REJECT closes the
// pull request, deletes its branch, and quotes the reason on the vision
// issue, once; the vision is not pitched again, not even after the
// architect loses its data dir, until its body changes, and then on a new
// branch.
func TestRejection(t *testing.T) {
	r := newRig(t)
	vs, prs := r.pitched("Add billing")
	v, pr := vs[0], prs[0]
	r.mustTick()
	r.say(r.human, pr.Number, "REJECT: too costly")
	models := r.sessions()
	r.mustTick()
	got := r.mustSprint(v.Number)
	if got.State != forge.StateClosed || got.Merged {
		t.Fatalf("sprint pull request %s merged=%v", got.State, got.Merged)
	}
	if _, err := r.opsRepo.GetBranch(ctxOf(t), pr.Head); err == nil {
		t.Errorf("branch %s survives", pr.Head)
	}
	notes := r.comments(v.Number)
	if len(notes) != 1 || !strings.Contains(notes[0].Body, "> too costly") {
		t.Fatalf("vision comments %+v", notes)
	}
	if r.sessions() != models {
		t.Errorf("%d model requests for a rejection", r.sessions()-models)
	}
	acks := len(r.botComments(pr.Number))

	r.data = sandboxtest.Dir(t, "architect-lost")
	r.build() // a lost data dir: only the forge remembers
	r.mustTick()
	r.mustTick()
	if len(r.comments(v.Number)) != 1 || len(r.botComments(pr.Number)) != acks || r.sessions() != models {
		t.Fatalf("after a lost data dir: %d vision comments, %d architect comments (was %d), %d model requests",
			len(r.comments(v.Number)), len(r.botComments(pr.Number)), acks, r.sessions()-models)
	}
	if _, ok := r.sprintOf(v.Number); !ok || len(r.pulls()) != 1 {
		t.Fatalf("re-pitched without a body change: %d pull requests", len(r.pulls()))
	}

	body := "Why: Add billing, monthly and yearly."
	if _, err := r.repo.EditIssue(ctxOf(t), v.Number, forge.IssueEdit{Body: &body}); err != nil {
		t.Fatal(err)
	}
	r.mustTick()
	again := r.mustSprint(v.Number)
	if again.Number == pr.Number || again.State != forge.StateOpen || again.Head != branchFor(v.Number, 2) {
		t.Fatalf("re-pitch %+v", again)
	}
}

// TestBotRejectChangesNothing (§3.12.7, W-AR-1): with three open sprint
// pull requests carrying only bot comments, one of them a bot's REJECT:,
// and a non-decider's ACCEPT, a run changes nothing and asks the model
// nothing; a fourth vision waits for the budget.
func TestBotRejectChangesNothing(t *testing.T) {
	r := newRig(t)
	_, prs := r.pitched("Add billing", "Add search", "Add export")
	stranger := gitea.Get(t).NewUser(t, "stranger")
	r.say(r.other, prs[0].Number, "REJECT: the dev bot says no")
	r.say(stranger, prs[1].Number, "ACCEPT")
	r.review(r.other, prs[2], forge.ReviewRequestChanges, "no")
	fourth := r.vision("Add reports", "Why: reports.")
	r.script(pitchScenario(fourth.Number, "Add reports"))
	models := r.sessions()
	r.proxy.Reset()
	r.mustTick()
	r.mustTick()
	if r.sessions() != models {
		t.Errorf("%d model requests", r.sessions()-models)
	}
	for _, pr := range prs {
		got, err := r.opsRepo.GetPull(ctxOf(t), pr.Number)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != forge.StateOpen || len(r.botComments(pr.Number)) != 1 || r.stage(pr.Number) != string(StageAwaitingDecision) {
			t.Errorf("#%d: %s, %d architect comments, stage %q", pr.Number, got.State, len(r.botComments(pr.Number)), r.stage(pr.Number))
		}
	}
	if _, ok := r.sprintOf(fourth.Number); ok {
		t.Errorf("a fourth sprint was opened over the budget")
	}
}

// TestTwoVisionsDecidedIndependently: two visions pitched in one run are
// decided in one run, one accepted and one rejected, each by its own
// state.
func TestTwoVisionsDecidedIndependently(t *testing.T) {
	r := newRig(t)
	vs, prs := r.pitched("Add billing", "Add search")
	if len(r.pulls()) != 2 || prs[0].Number == prs[1].Number {
		t.Fatalf("pull requests %+v", r.pulls())
	}
	r.say(r.human, prs[0].Number, "ACCEPT\nGo ahead.")
	r.review(r.human, prs[1], forge.ReviewRequestChanges, "Search is not a priority.")
	r.script(scenario("questions", followUpMarker(ModeQuestions, prs[0].Number), 2,
		writeOutbox("", `{"comments": ["Q1: Monthly or yearly?"], "ready": false}`)),
		pitchScenario(vs[0].Number, "Add billing"), pitchScenario(vs[1].Number, "Add search"))
	r.mustTick()
	if s := r.stage(prs[0].Number); s != string(StageAwaitingAnswers) {
		t.Errorf("accepted sprint at %q", s)
	}
	if got := r.mustSprint(vs[1].Number); got.State != forge.StateClosed {
		t.Errorf("rejected sprint is %s", got.State)
	}
	if n := r.comments(vs[1].Number); len(n) != 1 || !strings.Contains(n[0].Body, "Search is not a priority.") {
		t.Errorf("rejected vision's comments %+v", n)
	}
	if len(r.comments(vs[0].Number)) != 0 {
		t.Errorf("the accepted vision got comments")
	}
	if q := r.requests("questions"); len(q) != 2 || !strings.Contains(strings.Join(q[0].Texts, "\n"), "Go ahead.") {
		t.Errorf("questions session: %d requests", len(q))
	}
}

// TestBudget (§3.12.3): two open sprints and three unpitched visions
// give exactly one new sprint.
func TestBudget(t *testing.T) {
	r := newRig(t)
	r.pitched("Add billing", "Add search")
	var ss []claudetest.Scenario
	var vs []forge.Issue
	for _, title := range []string{"Add export", "Add reports", "Add audit"} {
		v := r.vision(title, "Why: "+title+".")
		vs = append(vs, v)
		ss = append(ss, pitchScenario(v.Number, title))
	}
	r.script(ss...)
	r.mustTick()
	opened := 0
	for _, v := range vs {
		if _, ok := r.sprintOf(v.Number); ok {
			opened++
		}
	}
	if opened != 1 || len(r.pulls()) != 3 {
		t.Errorf("%d new sprints, %d pull requests", opened, len(r.pulls()))
	}
}

// TestExclusions (§3.12.4, W-AR-8): a vision in progress, one whose
// sprint was merged, one with an open sprint and one with an open
// sub-issue of the filer are not pitched. The filer's marker in anyone
// else's issue excludes nothing: an outsider cannot keep a vision from
// being pitched by pasting it.
func TestExclusions(t *testing.T) {
	r := newRig(t)
	vs, prs := r.pitched("Add billing", "Add search")
	merged := prs[0]
	ctx := ctxOf(t)
	if err := r.opsRepo.Merge(ctx, merged.Number, forge.MergeOptions{HeadSHA: merged.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	busy := r.vision("Add export", "Why: export.", forge.LabelInProgress)
	sub := r.vision("Add audit", "Why: audit.")
	filer := r.other.Client.Repo(r.repo.Owner(), r.repo.Name())
	if _, err := filer.CreateIssue(ctx, forge.NewIssue{Title: "vision(#x): audit log",
		Body: "Log it.\n\n" + forge.DecomposedFrom{Vision: sub.Number, Sprint: "add-audit", ID: "log"}.String()}); err != nil {
		t.Fatal(err)
	}
	decoy := r.vision("Add reports", "Why: reports.")
	outsider := gitea.Get(t).NewUser(t, "mallory")
	if _, err := outsider.Client.Repo(r.repo.Owner(), r.repo.Name()).CreateIssue(ctx, forge.NewIssue{Title: "vision(#x): reports",
		Body: "Nothing.\n\n" + forge.DecomposedFrom{Vision: decoy.Number, Sprint: "add-reports", ID: "x"}.String()}); err != nil {
		t.Fatal(err)
	}
	r.script(pitchScenario(vs[0].Number, "Add billing"), pitchScenario(vs[1].Number, "Add search"),
		pitchScenario(busy.Number, "Add export"), pitchScenario(sub.Number, "Add audit"),
		pitchScenario(decoy.Number, "Add reports"))
	r.mustTick()
	if _, ok := r.sprintOf(decoy.Number); !ok || len(r.pulls()) != 3 {
		t.Errorf("%d pull requests; the vision with an outsider's marker pitched: %v", len(r.pulls()), ok)
	}
	for _, v := range []forge.Issue{busy, sub} {
		if _, ok := r.sprintOf(v.Number); ok {
			t.Errorf("vision #%d was pitched", v.Number)
		}
	}
	inFlight := map[int64]bool{}
	for _, it := range r.a.Report().Items {
		inFlight[it.PR] = true
	}
	if len(inFlight) != 2 || !inFlight[prs[1].Number] || inFlight[merged.Number] {
		t.Errorf("report %+v (the merged sprint is not in flight)", r.a.Report().Items)
	}
}

// TestLeftoverBranch (§3.12.9): a closed pull request from
// architect/sprint-vision-N does not block the pitch of #N.
func TestLeftoverBranch(t *testing.T) {
	r := newRig(t)
	v := r.vision("Add billing", "Customers pay.")
	ctx := ctxOf(t)
	head := branchFor(v.Number, 1)
	if _, err := r.opsRepo.CreateBranch(ctx, head, "main"); err != nil {
		t.Fatal(err)
	}
	if err := r.opsRepo.CreateFiles(ctx, head, "old pitch", []forge.NewFile{{Path: "sprints/old.md", Content: []byte("old\n")}}); err != nil {
		t.Fatal(err)
	}
	old, err := r.opsRepo.CreatePull(ctx, forge.NewPull{Title: "architect: Add billing", Body: "old pitch #" + itoa(v.Number), Head: head, Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.opsRepo.ClosePull(ctx, old.Number); err != nil {
		t.Fatal(err)
	}
	r.script(pitchScenario(v.Number, "Add billing"))
	r.mustTick()
	pr := r.mustSprint(v.Number)
	if pr.Number == old.Number || pr.State != forge.StateOpen || pr.Head != branchFor(v.Number, 2) {
		t.Fatalf("sprint %+v", pr)
	}
}

// TestEmptyVision (W-AR-13): a vision issue with an empty body is not
// pitched; it gets one comment saying why, and the underspecified label
// from the labelling identity (the filer bot in the daemon: the
// architect bot, read-only on the project, may comment but not label);
// it is pitched once a human writes the body.
func TestEmptyVision(t *testing.T) {
	r := newRig(t)
	v := r.vision("Add billing", "")
	r.script(pitchScenario(v.Number, "Add billing"))
	r.mustTick()
	r.mustTick()
	if r.sessions() != 0 || len(r.pulls()) != 0 {
		t.Fatalf("%d model requests, %d pull requests", r.sessions(), len(r.pulls()))
	}
	cs := r.comments(v.Number)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, "no body") {
		t.Fatalf("comments %+v", cs)
	}
	if got := r.issue(v.Number); got.HasLabel(forge.LabelUnderspecified) {
		t.Errorf("a read-only bot labelled #%d", v.Number)
	}
	c, err := forge.New(forge.Options{URL: r.proxy.URL, Token: r.other.Token, User: r.other.Login})
	if err != nil {
		t.Fatal(err)
	}
	r.labeler = c.Repo(r.repo.Owner(), r.repo.Name())
	r.build()
	w := r.vision("Add search", "  \n")
	r.mustTick()
	if got := r.issue(w.Number); !got.HasLabel(forge.LabelUnderspecified) || len(r.comments(w.Number)) != 1 {
		t.Errorf("#%d labels %v, %d comments", w.Number, got.Labels, len(r.comments(w.Number)))
	}
	body := "Customers pay monthly."
	if _, err := r.repo.EditIssue(ctxOf(t), w.Number, forge.IssueEdit{Body: &body}); err != nil {
		t.Fatal(err)
	}
	r.script(pitchScenario(w.Number, "Add search"))
	r.mustTick()
	r.mustSprint(w.Number)
	if got := r.issue(w.Number); got.HasLabel(forge.LabelUnderspecified) {
		t.Errorf("the pitched vision is still labelled underspecified")
	}
}

func (r *rig) issue(n int64) forge.Issue {
	r.t.Helper()
	i, err := r.repo.GetIssue(ctxOf(r.t), n)
	if err != nil {
		r.t.Fatal(err)
	}
	return i
}

// TestClosedWithoutDecision: a sprint a human closes without a decision
// counts as rejected: the vision is noted and not pitched again until its
// body changes, or until a human deletes the note.
func TestClosedWithoutDecision(t *testing.T) {
	r := newRig(t)
	vs, prs := r.pitched("Add billing")
	if err := r.opsRepo.ClosePull(ctxOf(t), prs[0].Number); err != nil {
		t.Fatal(err)
	}
	models := r.sessions()
	r.mustTick()
	r.mustTick()
	if r.sessions() != models || len(r.pulls()) != 1 {
		t.Fatalf("%d model requests, %d pull requests", r.sessions()-models, len(r.pulls()))
	}
	if n := r.comments(vs[0].Number); len(n) != 1 || !strings.Contains(n[0].Body, "closed without a decision") {
		t.Fatalf("vision comments %+v", n)
	}
	if _, err := r.opsRepo.GetBranch(ctxOf(t), prs[0].Head); err == nil {
		t.Errorf("branch %s survives", prs[0].Head)
	}
	// A human clears the marker: the vision is pitched again, at the
	// latest by the daily complete run (a deleted comment moves nothing
	// the cheap check sees).
	if err := r.repo.DeleteComment(ctxOf(t), r.comments(vs[0].Number)[0].ID); err != nil {
		t.Fatal(err)
	}
	r.now = r.now.Add(fullRunEvery)
	r.mustTick()
	if again := r.mustSprint(vs[0].Number); again.State != forge.StateOpen || again.Head != branchFor(vs[0].Number, 2) {
		t.Fatalf("re-pitch after the marker was cleared: %+v", again)
	}
}

// TestHandMadeSprint: an open pull request from a sprint branch of the
// ops repository without the architect's marker (a legacy or hand-made
// sprint) keeps its vision from a second pitch, and is otherwise left
// alone.
func TestHandMadeSprint(t *testing.T) {
	r := newRig(t)
	v := r.vision("Add billing", "Customers pay.")
	ctx := ctxOf(t)
	head := branchFor(v.Number, 1)
	if _, err := r.opsRepo.CreateBranch(ctx, head, "main"); err != nil {
		t.Fatal(err)
	}
	if err := r.opsRepo.CreateFiles(ctx, head, "hand-made", []forge.NewFile{{Path: "sprints/add-billing.md", Content: []byte(sprintDoc(v.Number, "Add billing", ""))}}); err != nil {
		t.Fatal(err)
	}
	hand, err := r.opsRepo.CreatePull(ctx, forge.NewPull{Title: "architect: Add billing", Body: "by hand", Head: head, Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	r.script(pitchScenario(v.Number, "Add billing"))
	r.mustTick()
	if r.sessions() != 0 || len(r.pulls()) != 1 || len(r.opsComments(hand.Number)) != 0 {
		t.Fatalf("%d model requests, %d pull requests, %d comments on the hand-made one", r.sessions(), len(r.pulls()), len(r.opsComments(hand.Number)))
	}
}

// TestLostConversation: when the data dir (and with it the sprint's
// conversation) is lost after the pitch, the questions session starts
// afresh with the full prompt: the vision, the sprint file and the
// discussion.
func TestLostConversation(t *testing.T) {
	r := newRig(t)
	vs, prs := r.pitched("Add billing")
	r.data = sandboxtest.Dir(t, "architect-lost")
	r.build()
	r.say(r.human, prs[0].Number, "ACCEPT")
	r.script(scenario("fresh-questions", `This session is in mode "questions"`, 0,
		writeOutbox("", `{"comments": ["Q1: Stripe or Paddle?"], "ready": false}`)), pitchScenario(vs[0].Number, "Add billing"))
	r.mustTick()
	q := r.requests("fresh-questions")
	if len(q) != 2 {
		t.Fatalf("%d fresh questions requests", len(q))
	}
	p := strings.Join(q[0].Texts, "\n")
	for _, want := range []string{"Why: Add billing.", "## Sub-issues", fmt.Sprintf("#%d", prs[0].Number), "ACCEPT"} {
		if !strings.Contains(p, want) {
			t.Errorf("fresh prompt lacks %q", want)
		}
	}
	if s := r.stage(prs[0].Number); s != string(StageAwaitingAnswers) {
		t.Errorf("stage %q", s)
	}
}

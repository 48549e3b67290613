package planner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/evidence"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/text"
	"github.com/disinto/disinto/lib/vision"
)

// maxOutbox bounds the plan file read back.
const maxOutbox = 512 << 10

// recentlyClosed is how far back closed issues are shown.
const recentlyClosed = 30 * 24 * time.Hour

// result is what one run did.
type result struct {
	decisions Decisions
	applied   *applied
	ops       opsResult
	// treeWritten and memoryWritten say what the ops commit carried.
	treeWritten, memoryWritten bool
	requests                   []string
	// untriaged are the open predictions the run left undecided.
	untriaged []int64
	// pending are the ops pull requests open after the run.
	pending []pendingPR
	// openBefore are the issues open when the run listed the tracker;
	// closed the issues of the planner's identity beyond the budget that
	// the run closed.
	openBefore map[int64]bool
	closed     []int64
	refused    []string
	lines      []string
	session    claude.Result
	// noVision: VISION.md is missing or still the template.
	noVision bool
}

// noVisionLine says why a run planned nothing.
const noVisionLine = "VISION.md is missing or still the template: nothing to plan until a maintainer writes the vision"

// noVision reports whether the primary branch has no vision to plan
// from: no VISION.md, or the template disinto init seeded.
func (a *Agent) noVision(ctx context.Context, w *formulaagent.Work) bool {
	data, err := fs.ReadFile(w.Primary(ctx), vision.Path)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return vision.IsTemplate(string(data))
}

// code is the run's code: excess closed first (something acted as the
// planner outside the run), then the first refusal.
func (r *result) code() ledger.Code {
	if len(r.closed) > 0 {
		return CodeExcessClosed
	}
	if len(r.decisions.Refused) > 0 {
		return r.decisions.Refused[0].Code
	}
	if len(r.refused) > 0 {
		return CodeRefused
	}
	return ""
}

// Summary is the run's summary, one line each: what was filed, triaged,
// written and requested, and why the rest was not.
func (r *result) Summary() []string {
	ap := r.applied
	out := []string{fmt.Sprintf("filed %d of a budget of %d issues%s", len(ap.Numbers), r.decisions.Budget, numbers(ap.Numbers))}
	if len(ap.Actioned)+len(ap.Dismissed) > 0 {
		out = append(out, fmt.Sprintf("triaged %d predictions: actioned%s, dismissed%s", len(ap.Actioned)+len(ap.Dismissed),
			numbers(ap.Actioned), numbers(ap.Dismissed)))
	}
	if len(ap.PriorityAdded)+len(ap.PriorityRemoved) > 0 {
		out = append(out, fmt.Sprintf("priority added to%s, removed from%s", numbers(ap.PriorityAdded), numbers(ap.PriorityRemoved)))
	}
	switch {
	case r.ops.Commit != "":
		out = append(out, fmt.Sprintf("ops commit %s (tree %t, memory %t)", text.ShortSHA(r.ops.Commit), r.treeWritten, r.memoryWritten))
	case r.ops.TreePR > 0:
		out = append(out, fmt.Sprintf("ops pull request #%d of the tree and memory from %s%s (the primary branch takes no direct commit)",
			r.ops.TreePR, r.ops.Branch, treeBranchSuffix))
	}
	if r.ops.PR > 0 {
		out = append(out, fmt.Sprintf("ops pull request #%d of procurement requests from %s", r.ops.PR, r.ops.Branch))
	}
	if len(r.requests) > 0 {
		out = append(out, "procurement requested: "+strings.Join(r.requests, ", "))
	}
	if len(r.closed) > 0 {
		out = append(out, fmt.Sprintf("%s: closed%s, opened as the planner beyond the budget", CodeExcessClosed, numbers(r.closed)))
	}
	for _, d := range r.decisions.Refused {
		out = append(out, d.String())
	}
	out = append(out, r.refused...)
	out = append(out, ap.Lines...)
	return append(out, r.lines...)
}

func numbers(ns []int64) string {
	if len(ns) == 0 {
		return " none"
	}
	var b strings.Builder
	for _, n := range ns {
		b.WriteString(" #" + strconv.FormatInt(n, 10))
	}
	return b.String()
}

func (r *result) record() ledger.Record {
	return formulaagent.SessionRecord(ledger.Record{Reason: ledger.ReasonPlanned, Code: r.code(), PR: max(r.ops.PR, r.ops.TreePR),
		Detail: strings.Join(r.Summary(), "; ")}, r.session)
}

// run is the body of a changed run: read the ops repository and the
// tracker, run the session, decide, apply, write the ops repository. A
// nil result means nothing was done; a result with an error means the
// run stopped part way (what it did is in the result).
func (a *Agent) run(ctx context.Context, runID string, runNo int, me string, pending []pendingPR, log zerolog.Logger) (*result, error) {
	v, err := a.readOps(ctx)
	if err != nil {
		return nil, err
	}
	if v != nil {
		if pending, err = a.stillOpen(ctx, pending); err != nil {
			return nil, err
		}
		for _, p := range pending {
			for _, s := range p.Slugs {
				v.requests[openRequests] = append(v.requests[openRequests], ProcurementPath(a.o.Project, s))
			}
		}
	}
	runNo = max(runNo, v.summarizedThrough()+1)
	t, err := a.tracker(ctx, v)
	if err != nil {
		return nil, err
	}
	w, err := a.o.Driver.Checkout(ctx, formulaagent.Branch(role, a.now()))
	if err != nil {
		return nil, err
	}
	defer func() { _ = w.Close() }()
	due := v != nil && v.memoryDue(runNo)
	res := &result{applied: newApplied(), openBefore: map[int64]bool{}, pending: pending}
	for _, i := range t.open {
		res.openBefore[i.Number] = true
	}
	if res.noVision = a.noVision(ctx, w); res.noVision && len(t.predictions) == 0 {
		// Nothing to plan from, and no prediction to answer: no session.
		res.lines = append(res.lines, noVisionLine)
		log.Info().Msg(noVisionLine)
		return res, nil
	}
	plan, err := a.session(ctx, w, t, v, runNo, due, res, log)
	if err != nil {
		return nil, err
	}
	res.decisions = Decide(plan, Tracker{Open: t.open, Predictions: t.predictions})
	for _, r := range res.decisions.Refused {
		log.Info().Str("code", string(r.Code)).Str("reason", r.Reason).Str("what", r.What).Msg("plan part not applied")
	}
	applyErr := a.apply(ctx, runID, plan, t, res)
	res.untriaged = untriaged(t.predictions, res.applied)
	if err := a.writeAll(ctx, runID, runNo, due, plan, v, t, res); err != nil {
		return res, err
	}
	if applyErr != nil {
		return res, applyErr
	}
	log.Info().Int("filed", len(res.applied.Numbers)).Int("budget", res.decisions.Budget).
		Int("actioned", len(res.applied.Actioned)).Int("dismissed", len(res.applied.Dismissed)).
		Str("ops_commit", res.ops.Commit).Int64("ops_pr", res.ops.PR).Msg("planner run applied")
	return res, nil
}

// apply does the plan's tracker changes in order: file, triage, priority,
// and the note on what the budget held back.
func (a *Agent) apply(ctx context.Context, runID string, plan Plan, t tracker, res *result) error {
	d, ap := res.decisions, res.applied
	if err := a.file(ctx, d, ap, t.shown.Marker()); err != nil {
		return err
	}
	if err := a.triage(ctx, d, ap); err != nil {
		return err
	}
	if err := a.prioritise(ctx, plan.Priority, d, t.open, ap); err != nil {
		return err
	}
	return a.noteRefused(ctx, runID, d, ap)
}

// untriaged are the open predictions the run did not decide.
func untriaged(preds []forge.Issue, ap *applied) []int64 {
	var out []int64
	for _, p := range preds {
		if !slices.Contains(ap.Actioned, p.Number) && !slices.Contains(ap.Dismissed, p.Number) {
			out = append(out, p.Number)
		}
	}
	return out
}

// tracker lists what the session is shown: the open issues (the open
// predictions among them), the recently closed ones and the last comments
// of the open issues the tree names.
func (a *Agent) tracker(ctx context.Context, v *opsView) (tracker, error) {
	var t tracker
	var err error
	if t.open, err = a.o.Forge.ListIssues(ctx, forge.IssueQuery{State: forge.StateOpen}); err != nil {
		return t, fmt.Errorf("list open issues: %w", err)
	}
	closed, err := a.o.Forge.ListIssues(ctx, forge.IssueQuery{State: forge.StateClosed, Since: a.now().Add(-recentlyClosed)})
	if err != nil {
		return t, fmt.Errorf("list closed issues: %w", err)
	}
	t.closed = newest(closed, closedShown)
	for _, i := range t.open {
		if i.HasLabel(forge.LabelPredictionUnreviewed) {
			t.predictions = append(t.predictions, i)
		}
	}
	t.comments = map[int64][]forge.Comment{}
	if v != nil {
		for _, n := range treeIssues(v.tree, t.open) {
			cs, err := a.o.Forge.ListComments(ctx, n)
			if err != nil {
				return t, fmt.Errorf("comments of #%d: %w", n, err)
			}
			if len(cs) > stuckComments {
				cs = cs[len(cs)-stuckComments:]
			}
			t.comments[n] = cs
		}
	}
	judge := provenance.New(provenance.Options{Forge: a.o.Forge, Now: a.now})
	if t.shown, err = judge.ShownOf(ctx, slices.Concat(t.open, t.closed), t.comments); err != nil {
		return t, err
	}
	return t, nil
}

// session runs the one session and reads its plan. A failed session
// fails the run; a missing or refused plan changes nothing this run, and
// the reason is in the summary.
func (a *Agent) session(ctx context.Context, w *formulaagent.Work, t tracker, v *opsView, runNo int, due bool,
	res *result, log zerolog.Logger) (Plan, error) {
	red := a.o.Redactor.String
	todo := tasks(runNo, due, len(t.predictions), v, a.o.Project)
	if res.noVision {
		todo += "VISION.md is missing or still the template disinto init seeded: there is no vision yet. Answer the predictions; " +
			"build no tree and propose no issue but the follow-ups of the predictions you action.\n"
	}
	blocks := []formula.Block{
		{Title: "Your tasks", Body: todo},
		{Title: "Open predictions to triage", Body: red(predictionsText(t.predictions)), Untrusted: true},
		{Title: "Open issues", Body: red(issuesText(t.open, openShown)), Untrusted: true},
		{Title: "Recently closed issues", Body: red(issuesText(t.closed, closedShown)), Untrusted: true},
		{Title: "Last comments of the tree's open issues", Body: red(commentsText(t)), Untrusted: true},
	}
	if v != nil {
		tree := v.tree
		if strings.TrimSpace(tree) == "" {
			tree = "(no tree yet: build it from VISION.md)\n"
		}
		blocks = append(blocks, formula.Block{Title: "Prerequisite tree (ops:" + a.treePath() + ")", Body: red(tree), Untrusted: true})
		var fsys fs.FS
		if v.head != "" {
			fsys = v.files.FS()
		}
		blocks = append(blocks, formula.Block{Title: "Evidence (ops:" + evidence.Dir + "/)", Body: red(evidence.Text(fsys)), Untrusted: true})
	}
	blocks = append(blocks, formulaagent.GraphBlock(ctx, a.o.Graph, a.o.Redactor, log)...)
	in := formulaagent.SessionInput{Vars: map[string]string{"project": a.o.Project}, Blocks: blocks}
	if v != nil && v.head != "" {
		in.OpsFS = v.files.FS()
	}
	ans, err := w.Ask(ctx, in, formulaagent.Outbox{File: PlanFile, Env: EnvPlan, Var: "plan_file", Max: maxOutbox, What: "a plan"})
	res.session = ans.Session
	if err == nil {
		err = ans.Failed()
	}
	if err != nil {
		return Plan{}, fmt.Errorf("planner session: %w", err)
	}
	if ans.Missing != nil {
		res.lines = append(res.lines, "the session wrote no plan")
		return Plan{}, nil
	}
	p, refused, err := ParsePlan(ans.Data)
	if err != nil {
		log.Warn().Str("error", err.Error()).Msg("plan refused")
		res.lines = append(res.lines, "plan refused: "+err.Error())
		return Plan{}, nil
	}
	for _, e := range refused {
		log.Warn().Str("error", e.Error()).Msg("plan part refused")
		res.refused = append(res.refused, "refused: "+e.Error())
	}
	return p, nil
}

// writeAll writes the run's ops changes: the tree when the plan has one
// that differs from the ops repository's (the date aside), the memory on
// the runs it is due, the procurement requests not filed before.
func (a *Agent) writeAll(ctx context.Context, runID string, runNo int, due bool, plan Plan, v *opsView, t tracker, res *result) error {
	if v == nil {
		if plan.Tree != nil || plan.Memory != "" || len(plan.Procurement) > 0 {
			res.lines = append(res.lines, "no ops repository: the tree, the memory and the procurement requests are not kept")
		}
		return nil
	}
	now := a.now()
	var w opsWrite
	if plan.Tree != nil {
		treeText := plan.Tree.Render(a.o.Project, now, res.applied.ref(res.decisions))
		switch err := plan.Tree.checkRoundTrip(treeText); {
		case err != nil:
			res.refused = append(res.refused, "refused: tree: "+err.Error())
		case undated(treeText) != undated(v.tree):
			w.own = append(w.own, git.FileChange{Path: a.treePath(), Content: []byte(treeText)})
			res.treeWritten = true
		}
	}
	switch {
	case due && plan.Memory != "":
		w.own = append(w.own, git.FileChange{Path: MemoryPath, Content: []byte(memoryText(runNo, now, plan.Memory))})
		res.memoryWritten = true
	case due:
		res.lines = append(res.lines, fmt.Sprintf("the memory was due at run %d and the session wrote none", runNo))
	case plan.Memory != "":
		res.lines = append(res.lines, fmt.Sprintf("memory ignored: not due until run %d", v.summarizedThrough()+MemoryEvery))
	}
	titles := map[int64]string{}
	for _, i := range t.open {
		titles[i.Number] = i.Title
	}
	for _, q := range plan.Procurement {
		if v.filed(a.o.Project, q.Slug) || slices.Contains(w.slugs, q.Slug) {
			res.lines = append(res.lines, fmt.Sprintf("procurement %q: already requested", q.Slug))
			continue
		}
		w.requests = append(w.requests, git.FileChange{Path: ProcurementPath(a.o.Project, q.Slug),
			Content: []byte(RequestBody(q, func(n int64) string { return titles[n] }))})
		w.slugs = append(w.slugs, q.Slug)
	}
	r, err := a.writeOps(ctx, runID, w, v)
	res.ops = r
	if err != nil {
		return err
	}
	res.requests = w.slugs
	if r.TreePR > 0 {
		if res.pending, err = a.supersede(ctx, res.pending, r.TreePR, runID); err != nil {
			return err
		}
		res.pending = append(res.pending, pendingPR{Number: r.TreePR, Tree: true})
	}
	if r.PR > 0 {
		res.pending = append(res.pending, pendingPR{Number: r.PR, Slugs: w.slugs})
	}
	return nil
}

// openRequests names, among the directories of filed requests, those
// waiting in the planner's open pull requests.
const openRequests = "open pull requests"

// undated drops the date line of a tree, which changes every day.
func undated(tree string) string {
	var out []string
	for _, l := range strings.Split(tree, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "<!-- Last updated:") {
			out = append(out, strings.TrimRight(l, " \t"))
		}
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// fileForge is what applying a plan does on the tracker, as the planner
// bot. Labels are added and removed one at a time, never replaced: an
// issue keeps every label the planner does not own (in-progress above
// all).
type fileForge interface {
	CreateIssue(ctx context.Context, in forge.NewIssue) (forge.Issue, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
	AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	RemoveLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	CloseIssue(ctx context.Context, n int64) error
}

// ciGreen is the acceptance criterion every backlog issue carries.
const ciGreen = "CI is green"

// Body renders the issue of p (spec 40 §2.4): a backlog issue in the
// template's shape, with the sections the gardener's quality gate
// checks; a vision issue with the problem, why it needs design and the
// objectives it blocks. follows is the prediction an action files it for
// (0: none). The model's text is neutralised: it carries no marker.
func Body(p Proposal, follows int64) string {
	q := func(s string) string { return forge.Neutralise(strings.TrimSpace(s)) }
	var b strings.Builder
	fmt.Fprintf(&b, "## Problem\n\n%s\n\n", q(p.Problem))
	if p.Kind == Vision {
		fmt.Fprintf(&b, "## Why vision\n\n%s\n\n", q(p.WhyVision))
		if s := strings.TrimSpace(p.Solution); s != "" {
			fmt.Fprintf(&b, "## Possible approaches\n\n%s\n\n", q(s))
		}
		if len(p.AffectedFiles) > 0 {
			b.WriteString("## Affected files\n\n")
			for _, f := range p.AffectedFiles {
				fmt.Fprintf(&b, "- `%s`\n", q(f))
			}
			b.WriteString("\n")
		}
	} else {
		fmt.Fprintf(&b, "## Proposed solution\n\n%s\n\n## Affected files\n\n", q(p.Solution))
		for _, f := range p.AffectedFiles {
			fmt.Fprintf(&b, "- `%s`\n", q(f))
		}
		b.WriteString("\n## Acceptance criteria\n\n")
		green := false
		for _, c := range p.Acceptance {
			green = green || strings.EqualFold(strings.TrimSpace(c), ciGreen)
			fmt.Fprintf(&b, "- [ ] %s\n", q(oneLine(c)))
		}
		if !green {
			fmt.Fprintf(&b, "- [ ] %s\n", ciGreen)
		}
		b.WriteString("\n")
	}
	if len(p.Objectives) > 0 {
		b.WriteString("## Blocks\n\n")
		for _, o := range p.Objectives {
			fmt.Fprintf(&b, "- objective: %s\n", q(oneLine(o)))
		}
		b.WriteString("\n")
	}
	if follows > 0 {
		fmt.Fprintf(&b, "Follows prediction #%d.\n", follows)
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// labelOf is the label an issue of kind k is filed with.
func labelOf(k Kind) forge.LabelName {
	if k == Vision {
		return forge.LabelVision
	}
	return forge.LabelBacklog
}

// applied is what applying the decisions did on the tracker.
type applied struct {
	// Filed maps refs to the issues filed for them, in order in Numbers.
	Filed   map[string]int64
	Numbers []int64
	// Triaged are the predictions decided, by decision.
	Actioned, Dismissed []int64
	// Touched are the issues this run changed (its own updates, which do
	// not count as news for the next run).
	Touched map[int64]bool
	// Priority are the issues given and relieved of the priority label.
	PriorityAdded, PriorityRemoved []int64
	Lines                          []string
}

func newApplied() *applied { return &applied{Filed: map[string]int64{}, Touched: map[int64]bool{}} }

// ref resolves a ref of the plan: the issue filed for it, or the open
// issue it duplicated; 0 when neither.
func (ap *applied) ref(d Decisions) func(string) int64 {
	return func(r string) int64 {
		if n, ok := ap.Filed[r]; ok {
			return n
		}
		return d.Existing[r]
	}
}

// file files the decided proposals as the planner bot, in order, and
// says which prediction each follows.
func (a *Agent) file(ctx context.Context, d Decisions, ap *applied, origin string) error {
	follows := map[string]int64{}
	for _, t := range d.Triage {
		if t.FollowUp != "" {
			follows[t.FollowUp] = t.Prediction
		}
	}
	for _, p := range d.File {
		body := Body(p, follows[p.Ref])
		if origin != "" {
			body += "\n" + origin + "\n"
		}
		i, err := a.o.Forge.CreateIssue(ctx, forge.NewIssue{Title: forge.Neutralise(p.Title), Body: body,
			Labels: []forge.LabelName{labelOf(p.Kind)}})
		if err != nil {
			return fmt.Errorf("file issue %q: %w", p.Title, err)
		}
		ap.Filed[p.Ref] = i.Number
		ap.Numbers = append(ap.Numbers, i.Number)
		ap.Touched[i.Number] = true
	}
	return nil
}

// triage applies the decisions on predictions: the reasoning comment
// first, then prediction/actioned or prediction/dismissed added and
// prediction/unreviewed removed, one label at a time (every other label
// stays), then the close. An action whose follow-up was not filed is
// not applied: the prediction waits for the next run.
func (a *Agent) triage(ctx context.Context, d Decisions, ap *applied) error {
	resolve := ap.ref(d)
	for _, t := range d.Triage {
		label, head := forge.LabelPredictionDismissed, "**Planner: dismissed.**"
		if t.Decision == Action {
			n := t.Existing
			if t.FollowUp != "" {
				n = resolve(t.FollowUp)
			}
			if n == 0 {
				ap.Lines = append(ap.Lines, fmt.Sprintf("prediction #%d not actioned: its follow-up was not filed", t.Prediction))
				continue
			}
			label, head = forge.LabelPredictionActioned, fmt.Sprintf("**Planner: actioned** — follow-up #%d.", n)
		}
		body := head + "\n\n" + forge.Neutralise(strings.TrimSpace(t.Reasoning)) + "\n"
		if _, err := a.o.Forge.CreateComment(ctx, t.Prediction, body); err != nil {
			return fmt.Errorf("triage #%d: %w", t.Prediction, err)
		}
		ap.Touched[t.Prediction] = true
		if err := a.o.Forge.AddLabels(ctx, t.Prediction, label); err != nil {
			return fmt.Errorf("triage #%d: %w", t.Prediction, err)
		}
		if err := a.o.Forge.RemoveLabels(ctx, t.Prediction, forge.LabelPredictionUnreviewed); err != nil {
			return fmt.Errorf("triage #%d: %w", t.Prediction, err)
		}
		if err := a.o.Forge.CloseIssue(ctx, t.Prediction); err != nil {
			return fmt.Errorf("triage #%d: %w", t.Prediction, err)
		}
		if t.Decision == Action {
			ap.Actioned = append(ap.Actioned, t.Prediction)
		} else {
			ap.Dismissed = append(ap.Dismissed, t.Prediction)
		}
	}
	return nil
}

// prioritise gives the top constraints the priority label and takes it
// from the open issues that dropped out, one label at a time. targets
// nil leaves the labels alone. Only open issues are labelled.
func (a *Agent) prioritise(ctx context.Context, targets []IssueRef, d Decisions, open []forge.Issue, ap *applied) error {
	if targets == nil {
		return nil
	}
	resolve := ap.ref(d)
	byNumber := map[int64]forge.Issue{}
	for _, i := range open {
		byNumber[i.Number] = i
	}
	var want []int64
	for _, t := range targets {
		n := t.Issue
		if t.Ref != "" {
			n = resolve(t.Ref)
		}
		_, isOpen := byNumber[n]
		if n > 0 && (isOpen || slices.Contains(ap.Numbers, n)) && !slices.Contains(want, n) {
			want = append(want, n)
		}
	}
	if len(targets) > 0 && len(want) == 0 {
		// Every named constraint is unfiled or closed: moving the label
		// off everything would say there are none.
		ap.Lines = append(ap.Lines, "priority unchanged: none of the named issues is open")
		return nil
	}
	for _, n := range want {
		if i, ok := byNumber[n]; ok && i.HasLabel(forge.LabelPriority) {
			continue
		}
		if err := a.o.Forge.AddLabels(ctx, n, forge.LabelPriority); err != nil {
			return fmt.Errorf("priority on #%d: %w", n, err)
		}
		ap.Touched[n] = true
		ap.PriorityAdded = append(ap.PriorityAdded, n)
	}
	for _, i := range open {
		if !i.HasLabel(forge.LabelPriority) || slices.Contains(want, i.Number) {
			continue
		}
		if err := a.o.Forge.RemoveLabels(ctx, i.Number, forge.LabelPriority); err != nil {
			return fmt.Errorf("priority off #%d: %w", i.Number, err)
		}
		ap.Touched[i.Number] = true
		ap.PriorityRemoved = append(ap.PriorityRemoved, i.Number)
	}
	return nil
}

// noteRefused comments on the last issue the run filed which proposals
// were not filed and why, so whoever reads the planner's work sees what
// the budget held back.
func (a *Agent) noteRefused(ctx context.Context, runID string, d Decisions, ap *applied) error {
	var over []Refusal
	for _, r := range d.Refused {
		if r.Code == CodeOverBudget {
			over = append(over, r)
		}
	}
	if len(over) == 0 || len(ap.Numbers) == 0 {
		return nil
	}
	last := ap.Numbers[len(ap.Numbers)-1]
	var b strings.Builder
	fmt.Fprintf(&b, "**Planner run %s:** the issue budget of this run is %d (max(%d, %d predictions triaged + 1)); it filed %d issues, this one last. %d more proposals were not filed:\n\n",
		forge.Neutralise(runID), d.Budget, MinBudget, len(d.Triage), len(ap.Numbers), len(over))
	for _, r := range over {
		fmt.Fprintf(&b, "- %s\n", forge.Neutralise(r.What))
	}
	b.WriteString("\nThey may come back in a later run, when the constraints they address are the current ones.\n")
	if _, err := a.o.Forge.CreateComment(ctx, last, b.String()); err != nil {
		return fmt.Errorf("note the proposals over budget on #%d: %w", last, err)
	}
	return nil
}

package reproduce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/provenance"
)

// Transition is what a validated outcome does to its bug report, decided
// in one place (transitionFor) and applied once (apply).
type Transition struct {
	Verdict Verdict
	// Add and Remove are the label changes; bug-report is never removed.
	Add, Remove []forge.LabelName
	// FileFixes files one fix issue per cause (or one from the root
	// cause); Close closes the report.
	FileFixes, Close bool
	// Block marks a transition that parks the issue for a human.
	Block bool
	// Header is the first line of the comment.
	Header string
}

// transitionFor is the state machine's edge for outcome o of a run in
// mode m (see the label table in stage.go).
func transitionFor(m Mode, o Outcome) Transition {
	t := Transition{Verdict: o.Outcome}
	switch {
	case m == ModeReproduce && o.Outcome == Reproduced && strings.TrimSpace(o.RootCause) != "":
		t.Add, t.FileFixes = []forge.LabelName{forge.LabelReproduced, forge.LabelInProgress}, true
		t.Header = "Reproduced, with an obvious cause: a fix issue is filed."
	case m == ModeReproduce && o.Outcome == Reproduced:
		t.Add = []forge.LabelName{forge.LabelInTriage}
		t.Header = "Reproduced; the cause is not obvious, so it goes to triage."
	case m == ModeReproduce && o.Outcome == CannotReproduce:
		t.Add = []forge.LabelName{forge.LabelRejected}
		t.Header = "Could not be reproduced."
	case m == ModeTriage && o.Outcome == Reproduced:
		t.Add, t.Remove, t.FileFixes = []forge.LabelName{forge.LabelReproduced, forge.LabelInProgress}, []forge.LabelName{forge.LabelInTriage}, true
		t.Header = fmt.Sprintf("Triaged: %d root cause(s), one fix issue each.", len(o.Causes))
	case m == ModeVerify && o.Outcome == VerifiedFixed:
		t.Remove, t.Close = []forge.LabelName{forge.LabelInProgress}, true
		t.Header = "Verified fixed: the reported steps no longer show the bug."
	case m == ModeVerify:
		t.Remove, t.Add = []forge.LabelName{forge.LabelInProgress}, []forge.LabelName{forge.LabelInTriage}
		t.Header = "Still reproduces after its fixes closed: back to triage."
	default: // needs-triage, from reproduce or triage
		t.Add, t.Block = []forge.LabelName{forge.LabelBlocked}, true
		t.Remove = []forge.LabelName{forge.LabelInTriage}
		t.Header = "Inconclusive: it needs a human's triage."
	}
	return t
}

// runMarkerKind marks the comment of each run, with its mode and verdict.
const runMarkerKind = "bug-report-run"

// apply makes transition of o on c's issue, in an order that a failure
// half-way leaves recoverable: screenshots, fix issues, comment, and the
// labels (and close) last, so a report is never moved on without its
// evidence. Each step is done once; a failure stops the rest and is
// returned in Result.Err with what was done.
//
// again means o is applied again after a failure: the screenshots
// uploaded then are found by name among the issue's attachments and the
// comment by its marker's run, so nothing is posted twice (fix issues are
// always looked up by their markers' run and cause first).
func (a *Agent) apply(ctx context.Context, c Candidate, o Outcome, shots []Screenshot, run string, again bool) Result {
	n := c.Issue.Number
	t := transitionFor(c.Mode, o)
	res := Result{Outcome: o, Run: run}
	if again && len(o.Screenshots) > 0 {
		have, err := a.o.Forge.ListIssueAttachments(ctx, n)
		if err != nil {
			res.Err = fmt.Errorf("attachments of #%d: %w", n, err)
			return res
		}
		for _, at := range have {
			if slices.Contains(o.Screenshots, at.Name) {
				res.Attachments = append(res.Attachments, at)
			}
		}
	}
	for _, s := range shots {
		at, err := a.o.Forge.UploadIssueAttachment(ctx, n, s.Name, s.Data)
		if err != nil {
			// Evidence is worth a note, not the transition.
			a.o.Log.Warn().Err(err).Int64("issue", n).Str("file", s.Name).Msg("attach screenshot")
			continue
		}
		res.Attachments = append(res.Attachments, at)
	}
	if t.FileFixes {
		fixes, err := a.fileFixes(ctx, c.Issue, o, run)
		res.Fixes = fixes
		if err != nil {
			res.Err = err
			return res
		}
	}
	posted := false
	if again {
		var err error
		if posted, err = a.commented(ctx, n, run); err != nil {
			res.Err = err
			return res
		}
	}
	if !posted {
		if _, err := a.o.Forge.CreateComment(ctx, n, comment(c, t, o, res, a.clean)); err != nil {
			res.Err = fmt.Errorf("comment on #%d: %w", n, err)
			return res
		}
	}
	if len(t.Remove) > 0 {
		if err := a.o.Forge.RemoveLabels(ctx, n, t.Remove...); err != nil {
			res.Err = fmt.Errorf("labels of #%d: %w", n, err)
			return res
		}
	}
	if len(t.Add) > 0 {
		if err := a.o.Forge.AddLabels(ctx, n, t.Add...); err != nil {
			res.Err = fmt.Errorf("labels of #%d: %w", n, err)
			return res
		}
	}
	if t.Close {
		if err := a.o.Forge.CloseIssue(ctx, n); err != nil {
			res.Err = fmt.Errorf("close #%d: %w", n, err)
		}
	}
	res.Applied = &t
	return res
}

// fileFixes files the fix issues of o: one per triage cause, or one from
// a reproduction's obvious root cause. Each carries the backlog label
// (by id: lib/forge resolves it), a line naming its bug report (which the
// gardener reads), the marker that links it for verification, and the
// origin marker: a fix issue is made from the bug report's text, so an
// outsider's report makes fix issues the dev agent takes only once a
// maintainer applies backlog to them.
func (a *Agent) fileFixes(ctx context.Context, parent forge.Issue, o Outcome, run string) ([]forge.Issue, error) {
	causes := o.Causes
	if len(causes) == 0 {
		causes = []Cause{{Title: parent.Title, Body: "Root cause: " + o.RootCause}}
	}
	filed, err := a.fixIssues(ctx, parent.Created)
	if err != nil {
		return nil, err
	}
	origin, err := provenance.New(provenance.Options{Forge: a.o.Forge, Now: a.o.Now}).Issue(ctx, parent)
	if err != nil {
		return nil, fmt.Errorf("origin of #%d: %w", parent.Number, err)
	}
	var out []forge.Issue
	for k, cs := range causes {
		ref := fixRef{Parent: parent.Number, Run: run, Cause: k + 1}
		if i, ok := filedAs(filed[parent.Number], ref, a.o.Bot); ok {
			out = append(out, i)
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Decomposed from #%d (cause %d of %d)\n\n", parent.Number, k+1, len(causes))
		b.WriteString(a.clean(strings.TrimSpace(cs.Body)))
		if len(cs.AffectedFiles) > 0 {
			b.WriteString("\n\n## Affected files\n\n")
			for _, f := range cs.AffectedFiles {
				b.WriteString("- `" + a.clean(strings.ReplaceAll(f, "`", "")) + "`\n")
			}
		}
		fmt.Fprintf(&b, "\n\n## Acceptance criteria\n\n- [ ] The steps of #%d no longer show the bug.\n- [ ] A test covers the cause.\n\n", parent.Number)
		b.WriteString(fixMarker(ref) + "\n")
		b.WriteString(provenance.Marker(origin, fmt.Sprintf("issue-%d", parent.Number)) + "\n")
		i, err := a.o.Forge.CreateIssue(ctx, forge.NewIssue{
			Title: a.o.Redactor.String(fixTitle(cs.Title, parent)), Body: b.String(), Labels: []forge.LabelName{forge.LabelBacklog},
		})
		if i.Number > 0 {
			out = append(out, i)
		}
		if err != nil {
			return out, fmt.Errorf("file fix issue for #%d: %w", parent.Number, err)
		}
	}
	return out, nil
}

// clean makes session text fit for a comment or an issue: secrets
// masked, markers neutralised.
func (a *Agent) clean(s string) string {
	return forge.Neutralise(a.o.Redactor.String(s))
}

// filedAs is the issue among fixes filed for ref, if one was.
func filedAs(fixes []forge.Issue, ref fixRef, bot string) (forge.Issue, bool) {
	for _, i := range fixes {
		if got, ok := fixOf(i, bot); ok && got == ref {
			return i, true
		}
	}
	return forge.Issue{}, false
}

// comment is the run's comment: the header, the findings (cleaned: they
// are the session's text), the screenshots, the fix issues, and the run
// marker.
func comment(c Candidate, t Transition, o Outcome, res Result, clean func(string) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** (%s run)\n\n", t.Header, c.Mode)
	if rc := strings.TrimSpace(o.RootCause); rc != "" {
		b.WriteString("Root cause: " + clean(rc) + "\n\n")
	}
	b.WriteString("### Findings\n\n" + clean(strings.TrimSpace(o.Findings)) + "\n")
	if len(res.Attachments) > 0 {
		b.WriteString("\n### Screenshots\n\n")
		for _, at := range res.Attachments {
			fmt.Fprintf(&b, "![%s](%s)\n", at.Name, at.URL)
		}
	}
	if len(res.Fixes) > 0 {
		b.WriteString("\n### Fix issues\n\n")
		for _, f := range res.Fixes {
			fmt.Fprintf(&b, "- #%d\n", f.Number)
		}
	}
	if len(c.Fixes) > 0 {
		b.WriteString("\n### Resolved fix issues\n\n")
		for _, f := range c.Fixes {
			fmt.Fprintf(&b, "- #%d\n", f.Number)
		}
	}
	m, _ := forge.Marker{Kind: runMarkerKind, Fields: map[string]string{"mode": string(c.Mode), "outcome": string(o.Outcome),
		"run": res.Run}}.String()
	b.WriteString("\n" + m + "\n")
	return b.String()
}

// commented reports whether the bot already posted the comment of run on
// issue n.
func (a *Agent) commented(ctx context.Context, n int64, run string) (bool, error) {
	cs, err := a.o.Forge.ListComments(ctx, n)
	if err != nil {
		return false, fmt.Errorf("comments of #%d: %w", n, err)
	}
	for _, cm := range cs {
		if m, ok := cm.MarkerBy(runMarkerKind, a.o.Bot); ok && m.Fields["run"] == run {
			return true, nil
		}
	}
	return false, nil
}

// block parks issue c after MaxAttempts failed runs: a comment saying
// why, and the blocked label.
func (a *Agent) block(ctx context.Context, c Candidate, cause error, n int) error {
	m, _ := forge.Marker{Kind: runMarkerKind, Fields: map[string]string{"mode": string(c.Mode), "outcome": "exhausted"}}.String()
	body := fmt.Sprintf("**The %s run failed %d times before the session answered; a human needs to look.**\n\nLast error: %s\n\n%s\n",
		c.Mode, n, forge.Neutralise(a.o.Redactor.Error(cause)), m)
	_, cerr := a.o.Forge.CreateComment(ctx, c.Issue.Number, body)
	lerr := a.o.Forge.AddLabels(ctx, c.Issue.Number, forge.LabelBlocked)
	return errors.Join(cerr, lerr)
}

package architect

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// Outcome codes of the architect's records.
const (
	CodePitched   ledger.Code = "sprint.pitched"
	CodeAccepted  ledger.Code = "sprint.accepted"
	CodeRejected  ledger.Code = "sprint.rejected"
	CodeQuestions ledger.Code = "sprint.questions"
	CodeAnswers   ledger.Code = "sprint.answers"
	// CodeInvalid: a session's sprint document or reply failed
	// validation; nothing of it was committed or posted.
	CodeInvalid ledger.Code = "sprint.invalid"
	// CodeUnderspecified: a vision issue with an empty body.
	CodeUnderspecified ledger.Code = "sprint.underspecified"
)

// postFooter posts the footer that tells humans how to decide.
func (p *pass) postFooter(ctx context.Context, v *view) error {
	c, err := p.a.o.Ops.CreateComment(ctx, v.pr.Number, Footer)
	if err != nil {
		return fmt.Errorf("sprint #%d: footer: %w", v.pr.Number, err)
	}
	v.comments = append(v.comments, c)
	return nil
}

// ackMarker is the decision marker of the acknowledgement of d.
func ackMarker(d Decision) string {
	return marker(forge.MarkerSprintDecision, map[string]string{"id": d.ID, "verdict": string(d.Verdict)})
}

// accept acknowledges an acceptance. A later one, on a sprint already
// accepted, changes nothing and is only recorded as acted on (after a
// lost record it is recorded again, silently).
func (p *pass) accept(ctx context.Context, v *view) error {
	d := *v.pending
	for id, verdict := range v.acted() {
		if verdict == Accept && id != d.ID {
			v.rec.Decisions = append(v.rec.Decisions, d.ID)
			return nil
		}
	}
	body := fmt.Sprintf("Accepted by @%s. The design questions follow.\n\n%s", d.Author, ackMarker(d))
	c, err := p.a.o.Ops.CreateComment(ctx, v.pr.Number, body)
	if err != nil {
		return fmt.Errorf("sprint #%d: acknowledge %s: %w", v.pr.Number, d.ID, err)
	}
	v.comments = append(v.comments, c)
	v.rec.Decisions = append(v.rec.Decisions, d.ID)
	p.log.Info().Int64("pr", v.pr.Number).Int64("issue", v.pr.Vision).Str("decision", d.ID).Msg("sprint accepted")
	return p.record(ledger.Record{Reason: ledger.ReasonDone, Code: CodeAccepted, PR: v.pr.Number, Issue: v.pr.Vision,
		Detail: fmt.Sprintf("accepted by %s (%s)", d.Author, d.ID)})
}

// reject carries out a rejection, each part once and in an order a crash
// can resume: the acknowledgement, the note on the vision issue (with
// the hash of its body, so it is not pitched again until the body
// changes), closing the pull request, deleting its branch.
func (p *pass) reject(ctx context.Context, v *view) error {
	d := *v.pending
	n := v.pr.Number
	if _, done := v.acted()[d.ID]; !done || !v.acked(d.ID) {
		body := fmt.Sprintf("Rejected by @%s: %s\n\nClosing this sprint. Vision issue #%d is not pitched again until its body changes.\n\n%s",
			d.Author, quoteReason(d.Reason), v.pr.Vision, ackMarker(d))
		c, err := p.a.o.Ops.CreateComment(ctx, n, body)
		if err != nil {
			return fmt.Errorf("sprint #%d: acknowledge %s: %w", n, d.ID, err)
		}
		v.comments = append(v.comments, c)
		if !v.rec.decided(d.ID) {
			v.rec.Decisions = append(v.rec.Decisions, d.ID)
		}
	}
	if err := p.noteRejection(ctx, v.pr, fmt.Sprintf("was rejected by @%s: %s", d.Author, quoteReason(d.Reason))); err != nil {
		return err
	}
	if err := p.a.o.Ops.ClosePull(ctx, n); err != nil {
		return fmt.Errorf("sprint #%d: close: %w", n, err)
	}
	v.pr.State = forge.StateClosed
	p.log.Info().Int64("pr", n).Int64("issue", v.pr.Vision).Str("decision", d.ID).Msg("sprint rejected")
	return p.record(ledger.Record{Reason: ledger.ReasonDone, Code: CodeRejected, PR: n, Issue: v.pr.Vision,
		Detail: fmt.Sprintf("rejected by %s (%s)", d.Author, d.ID)})
}

// acked reports whether the architect acknowledged decision id on the
// pull request.
func (v *view) acked(id string) bool {
	for _, c := range v.comments {
		if !v.mine(c) {
			continue
		}
		for _, m := range forge.ParseMarkers(c.Body) {
			if m.Kind == forge.MarkerSprintDecision && m.Fields["id"] == id {
				return true
			}
		}
	}
	return false
}

// noteRejection records on the vision issue, once, that its sprint s
// ended unmerged (what says how), with the hash of the vision's body.
func (p *pass) noteRejection(ctx context.Context, s sprintPR, what string) error {
	vision := s.Vision
	cs, err := p.a.o.Forge.ListComments(ctx, vision)
	if err != nil {
		return fmt.Errorf("vision #%d: %w", vision, err)
	}
	pr := strconv.FormatInt(s.Number, 10)
	for _, c := range cs {
		if m, ok := c.MarkerBy(forge.MarkerSprintRejected, p.me); ok && m.Fields["pr"] == pr {
			return nil
		}
	}
	issue, err := p.issue(ctx, vision)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("The sprint for this vision (ops pull request #%d) %s\n\n"+
		"It is not pitched again until this issue's body changes, or until this comment is deleted.\n\n%s",
		s.Number, what, marker(forge.MarkerSprintRejected, map[string]string{"pr": pr, "hash": bodyHash(issue.Body)}))
	if _, err := p.a.o.Forge.CreateComment(ctx, vision, body); err != nil {
		return fmt.Errorf("vision #%d: note the rejection: %w", vision, err)
	}
	return nil
}

// quoteReason renders a human's reason for a comment of the bot's:
// neutralised, and clipped.
func quoteReason(reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return "(no reason given)"
	}
	if len(reason) > 2000 {
		reason = reason[:2000] + "…"
	}
	return "\n\n> " + strings.ReplaceAll(forge.Neutralise(reason), "\n", "\n> ")
}

// cleanup ends a closed or merged sprint once: its session, workspace
// and (for a closed one) branch.
func (p *pass) cleanup(ctx context.Context, s sprintPR, pr *prRecord) error {
	if pr.Cleaned {
		return nil
	}
	if !s.Merged && !p.otherSprint(s) {
		// Closed by a human without a decision: a rejection too, or the
		// next run would pitch the vision again at once.
		if err := p.noteRejection(ctx, s, "was closed without a decision."); err != nil {
			return err
		}
	}
	if !s.Merged && !p.openOn(s.Branch, s.Number) {
		if err := p.a.o.Ops.DeleteBranch(ctx, s.Branch); err != nil {
			return fmt.Errorf("sprint #%d: delete branch %s: %w", s.Number, s.Branch, err)
		}
	}
	if err := p.a.o.Driver.RemoveWorkspace(workspaceKey(p.a.o.Project, s.Branch)...); err != nil {
		return err
	}
	if p.a.o.Sessions != nil {
		if err := p.a.o.Sessions.Delete(sessionKey(p.a.o.Project, s.Branch)); err != nil {
			return err
		}
	}
	pr.Cleaned = true
	return nil
}

// openOn reports whether an open pull request of the ops repository
// other than except has branch as its head (a closed sprint's branch is
// never deleted under one).
func (p *pass) openOn(branch string, except int64) bool {
	for _, pr := range p.pulls {
		if pr.Number != except && pr.State == forge.StateOpen && pr.Head == branch {
			return true
		}
	}
	return false
}

// otherSprint reports whether another sprint of s's vision is open or
// merged (s was then a duplicate, not a rejection).
func (p *pass) otherSprint(s sprintPR) bool {
	for _, o := range ourSprints(p.pulls, p.me) {
		if o.Number != s.Number && o.Vision == s.Vision && (o.State == forge.StateOpen || o.Merged) {
			return true
		}
	}
	return false
}

// issue reads a project issue.
func (p *pass) issue(ctx context.Context, n int64) (forge.Issue, error) {
	i, err := p.a.o.Forge.GetIssue(ctx, n)
	if err != nil {
		return forge.Issue{}, fmt.Errorf("vision #%d: %w", n, err)
	}
	return i, nil
}

// record appends a ledger record of the run.
func (p *pass) record(r ledger.Record) error {
	if p.run == nil {
		return nil
	}
	return p.run.Record(r)
}

// workspaceKey is the sandbox workspace of the sprint on branch.
func workspaceKey(project, branch string) []string {
	return []string{role, project, strings.TrimPrefix(branch, "architect/")}
}

package architect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/sprint"
	"github.com/disinto/disinto/lib/text"
)

// StatusContext is the commit status the architect keeps on every open
// sprint pull request's head: success while the body mirrors the sprint
// file (which parses), failure otherwise, so that a mismatch blocks the
// merge check (W-AR-6). Make it a required check of the ops repository's
// branch protection to enforce it.
const StatusContext = "disinto/sprint"

// design runs the sprint's design session: the questions after an
// acceptance, or the reading of new answers. The session's sprint
// document, when it passes validation, is committed to the sprint file
// on the branch and mirrored into the body; its comments are posted, the
// last one carrying the reply marker.
func (p *pass) design(ctx context.Context, v *view) error {
	mode := ModeAnswers
	if !v.asked() {
		mode = ModeQuestions
	}
	path := sprint.Path(v.pr.Slug)
	file, err := p.a.o.Ops.GetFile(ctx, path, v.pr.Branch)
	if err != nil {
		return fmt.Errorf("sprint #%d: %s: %w", v.pr.Number, path, err)
	}
	vision, err := p.issue(ctx, v.pr.Vision)
	if err != nil {
		return err
	}
	answers := v.newAnswers()
	through := v.through()
	for _, c := range v.humanComments() {
		through = max(through, c.ID)
	}
	red := p.a.o.Redactor
	blocks := []formula.Block{
		{Title: fmt.Sprintf("Vision issue #%d: %s", vision.Number, vision.Title), Body: red.String(vision.Body), Untrusted: true},
		{Title: fmt.Sprintf("Sprint pull request #%d: the current %s", v.pr.Number, path), Body: red.String(string(file.Content)), Untrusted: true},
		{Title: "The discussion so far (humans' comments and yours, oldest first)", Body: red.String(thread(v)), Untrusted: true},
	}
	if len(answers) > 0 {
		blocks = append(blocks, formula.Block{Title: "The humans' new comments since your last one", Body: red.String(commentsText(answers)), Untrusted: true})
	}
	followUp := func(env map[string]string) string {
		return red.String(followUpPrompt(mode, v.pr.Number, path, file.Content, answers, env))
	}
	out, err := p.session(ctx, sessionIn{branch: v.pr.Branch, mode: mode, vision: vision, pr: v.pr.Number, blocks: blocks, followUp: followUp})
	if err != nil {
		return err
	}
	v.rec.Asked, v.rec.Through = true, through
	var problems []string
	if out.sprint != nil {
		if err := p.revise(ctx, v, path, file, out.sprint); err != nil {
			if !errors.Is(err, errInvalid) {
				return err
			}
			problems = append(problems, err.Error())
		}
	}
	if out.replyErr != nil {
		problems = append(problems, out.replyErr.Error())
	}
	ready := out.reply.Ready && len(problems) == 0
	comments := append([]string(nil), out.reply.Comments...)
	if len(problems) > 0 {
		comments = append(comments, "The architect refused part of this design round (nothing of it was committed):\n\n- "+
			strings.Join(problems, "\n- "))
	}
	v.rec.Ready = ready
	if err := p.postReplies(ctx, v, comments, through, ready); err != nil {
		return err
	}
	code, reason := CodeQuestions, ledger.ReasonPlanned
	if mode == ModeAnswers {
		code = CodeAnswers
	}
	if len(problems) > 0 {
		code, reason = CodeInvalid, ledger.ReasonRefused
	}
	p.log.Info().Int64("pr", v.pr.Number).Str("mode", string(mode)).Int("comments", len(comments)).Bool("ready", ready).Msg("sprint design round")
	return p.record(ledger.Record{Reason: reason, Code: code, PR: v.pr.Number, Issue: v.pr.Vision,
		Detail:    fmt.Sprintf("%s: %d comments, ready=%v%s", mode, len(comments), ready, problemText(problems)),
		SessionID: out.res.SessionID, CostUSD: out.res.CostUSD, Turns: out.res.NumTurns,
		InputTokens: out.res.Usage.InputTokens, OutputTokens: out.res.Usage.OutputTokens})
}

func problemText(ps []string) string {
	if len(ps) == 0 {
		return ""
	}
	return "; refused: " + text.Clip(strings.Join(ps, "; "), 300)
}

// errInvalid marks a session's output that failed validation.
var errInvalid = errors.New("invalid sprint document")

// revise commits a new revision of the sprint file to the branch, when
// it parses, names the same vision and differs, and mirrors it into the
// pull request body.
func (p *pass) revise(ctx context.Context, v *view, path string, cur forge.File, data []byte) error {
	spec, err := sprint.Parse(path, data)
	if err != nil {
		return fmt.Errorf("%w: %w", errInvalid, err)
	}
	if int64(spec.Vision) != v.pr.Vision {
		return fmt.Errorf("%w: %s names vision #%d, not #%d", errInvalid, path, spec.Vision, v.pr.Vision)
	}
	if !bytes.Equal(bytes.TrimRight(data, "\n"), bytes.TrimRight(cur.Content, "\n")) {
		if _, err := p.a.o.Ops.PutFile(ctx, forge.FileChange{Path: path, Content: data, SHA: cur.SHA, Branch: v.pr.Branch,
			Message: "sprint: revise " + v.pr.Slug + ".md"}); err != nil {
			return fmt.Errorf("sprint #%d: commit %s: %w", v.pr.Number, path, err)
		}
	}
	body := mirror(data, v.pr.sprintID)
	if body != v.pr.Body {
		if _, err := p.a.o.Ops.EditIssue(ctx, v.pr.Number, forge.IssueEdit{Body: &body}); err != nil {
			return fmt.Errorf("sprint #%d: mirror the body: %w", v.pr.Number, err)
		}
		v.pr.Body = body
	}
	return nil
}

// postReplies posts the design comments, neutralised; the last carries
// the reply marker. With nothing to say, nothing is posted and the local
// record alone remembers the round.
func (p *pass) postReplies(ctx context.Context, v *view, comments []string, through int64, ready bool) error {
	mk := marker(forge.MarkerSprintReply, map[string]string{"through": strconv.FormatInt(through, 10), "ready": strconv.FormatBool(ready)})
	for i, body := range comments {
		body = forge.Neutralise(body)
		if i == len(comments)-1 {
			body += "\n\n" + mk
		}
		c, err := p.a.o.Ops.CreateComment(ctx, v.pr.Number, body)
		if err != nil {
			return fmt.Errorf("sprint #%d: post a design comment: %w", v.pr.Number, err)
		}
		v.comments = append(v.comments, c)
	}
	return nil
}

// thread renders the pull request's discussion for a prompt: the allowed
// humans' comments and the architect's, with authors.
func thread(v *view) string {
	var b strings.Builder
	for _, c := range v.comments {
		if !v.who.human(c.Author) && !v.mine(c) {
			continue
		}
		fmt.Fprintf(&b, "--- comment %d by %s", c.ID, c.Author)
		if v.mine(c) {
			b.WriteString(" (you)")
		}
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(c.Body))
	}
	if b.Len() == 0 {
		return "(no comments yet)"
	}
	return b.String()
}

// commentsText renders comments with their authors.
func commentsText(cs []forge.Comment) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "--- comment %d by %s\n%s\n", c.ID, c.Author, strings.TrimSpace(c.Body))
	}
	if b.Len() == 0 {
		return "(none)"
	}
	return b.String()
}

// followUpPrompt is the prompt of a resumed design session: the news
// only, since the conversation holds the rest.
func followUpPrompt(mode Mode, pr int64, path string, cur []byte, answers []forge.Comment, env map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Mode %q on sprint pull request #%d.\n\n", mode, pr)
	if mode == ModeQuestions {
		b.WriteString("A human accepted your pitch. Ask the design questions it leaves open, as the formula's step \"questions\" says.\n\n")
	} else {
		b.WriteString("Humans answered on the sprint pull request. Follow up or finalise, as the formula's step \"answers\" says.\n\n")
	}
	if len(answers) > 0 {
		b.WriteString("The humans' new comments:\n\n" + formula.Untrusted(commentsText(answers)) + "\n\n")
	}
	fmt.Fprintf(&b, "The current %s:\n\n%s\n\n", path, formula.Untrusted(string(cur)))
	fmt.Fprintf(&b, "Write the complete sprint document to %s ($%s) and the reply to %s ($%s): %s\n",
		env[EnvSprint], EnvSprint, env[EnvReply], EnvReply, ReplySchema)
	return b.String()
}

// ReplySchema is the reply file's shape, as the formula states it.
const ReplySchema = `{"comments": ["Q1: ...", "Q2: ..."], "ready": false}`

// check keeps the merge check of an open sprint pull request: the head's
// sprint file parses, and the body mirrors it.
func (p *pass) check(ctx context.Context, v *view) error {
	b, err := p.a.o.Ops.GetBranch(ctx, v.pr.Branch)
	if err != nil {
		return fmt.Errorf("sprint #%d: head: %w", v.pr.Number, err)
	}
	path := sprint.Path(v.pr.Slug)
	st := forge.CommitStatus{Context: StatusContext, State: forge.CISuccess, Description: "the body mirrors " + path}
	f, err := p.a.o.Ops.GetFile(ctx, path, b.SHA)
	switch {
	case errors.Is(err, forge.ErrNotFound):
		st.State, st.Description = forge.CIFailure, path+" is missing"
	case err != nil:
		return fmt.Errorf("sprint #%d: %s: %w", v.pr.Number, path, err)
	default:
		if _, perr := sprint.Parse(path, f.Content); perr != nil {
			st.State, st.Description = forge.CIFailure, text.Clip(perr.Error(), 200)
		} else if mirror(f.Content, v.pr.sprintID) != v.pr.Body {
			st.State, st.Description = forge.CIFailure, "the body differs from "+path+", which is authoritative"
		}
	}
	key := b.SHA + ":" + string(st.State) + ":" + st.Description
	if v.rec.Status == key {
		return nil
	}
	if err := p.a.o.Ops.CreateStatus(ctx, b.SHA, st); err != nil {
		return fmt.Errorf("sprint #%d: merge check: %w", v.pr.Number, err)
	}
	v.rec.Status = key
	return nil
}

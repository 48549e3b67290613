package review

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/verdict"
)

// publish puts the review of st.Head on the forge: the comment with both
// markers, then the formal review pinned to the head (after dismissing the
// bot's own earlier change requests when approving). Each step is recorded
// as it succeeds, so a failure is completed by the next tick without the
// model.
func (a *Agent) publish(ctx context.Context, pr forge.PullRequest, st *prState, log zerolog.Logger) error {
	in := commentInput{Head: st.Head, Previous: st.Previous, Round: st.Round, Out: *st.Output}
	if !st.CommentPosted {
		body := formatComment(in)
		posted, err := a.commentPosted(ctx, pr.Number, st)
		if err != nil {
			return err
		}
		if !posted {
			if err := a.tried(st, &st.CommentTried); err != nil {
				return err
			}
			if _, err := a.opts.Forge.CreateComment(ctx, pr.Number, body); err != nil {
				return fmt.Errorf("post review comment: %w", err)
			}
		}
		st.CommentPosted, st.CommentBody = true, body
		if err := a.store.save(st); err != nil {
			return err
		}
	}
	if st.FormalPosted {
		return nil
	}
	if st.Verdict.Approved() {
		// Best effort: the forge lets only repository admins dismiss, and
		// it already counts a reviewer's latest review only, so the
		// approval below supersedes the bot's change requests anyway.
		if err := a.dismissOwnChangeRequests(ctx, pr.Number); err != nil {
			log.Info().Err(err).Msg("dismiss earlier change requests")
		}
	}
	posted, err := a.formalPosted(ctx, pr.Number, st)
	if err != nil {
		return err
	}
	if !posted {
		if err := a.tried(st, &st.FormalTried); err != nil {
			return err
		}
		if _, err := a.opts.Forge.CreateReview(ctx, pr.Number, forge.NewReview{
			Event:    st.Verdict.Event(),
			Body:     formalBody(in),
			CommitID: st.Head,
		}); err != nil {
			return fmt.Errorf("post formal review: %w", err)
		}
	}
	st.FormalPosted = true
	return a.store.save(st)
}

// tried records, before a post, that it is about to be sent.
func (a *Agent) tried(st *prState, flag *bool) error {
	if *flag {
		return nil
	}
	*flag = true
	return a.store.save(st)
}

// commentPosted reports whether an earlier post of the review comment of
// st.Head, whose answer was lost, reached the forge after all: a comment
// of the bot carrying the head's reviewed marker.
func (a *Agent) commentPosted(ctx context.Context, pr int64, st *prState) (bool, error) {
	if !st.CommentTried {
		return false, nil
	}
	cs, err := a.opts.Forge.ListComments(ctx, pr)
	if err != nil {
		return false, fmt.Errorf("look for the review comment: %w", err)
	}
	marker := forge.RefMarker(forge.RefReviewed, st.Head)
	for _, c := range cs {
		if strings.EqualFold(c.Author, a.bot) && strings.Contains(c.Body, marker) {
			return true, nil
		}
	}
	return false, nil
}

// formalPosted reports whether an earlier post of the formal review of
// st.Head, whose answer was lost, reached the forge after all.
func (a *Agent) formalPosted(ctx context.Context, pr int64, st *prState) (bool, error) {
	if !st.FormalTried {
		return false, nil
	}
	rs, err := a.opts.Forge.ListReviews(ctx, pr)
	if err != nil {
		return false, fmt.Errorf("look for the formal review: %w", err)
	}
	for _, r := range rs {
		if strings.EqualFold(r.Author, a.bot) && r.CommitID == st.Head && r.State == st.Verdict.Event() {
			return true, nil
		}
	}
	return false, nil
}

// dismissOwnChangeRequests dismisses the review bot's earlier
// REQUEST_CHANGES reviews; a human's are never touched.
func (a *Agent) dismissOwnChangeRequests(ctx context.Context, pr int64) error {
	reviews, err := a.opts.Forge.ListReviews(ctx, pr)
	if err != nil {
		return fmt.Errorf("list reviews: %w", err)
	}
	for _, r := range reviews {
		if r.State != forge.ReviewRequestChanges || r.Dismissed || !strings.EqualFold(r.Author, a.bot) {
			continue
		}
		if err := a.opts.Forge.DismissReview(ctx, pr, r.ID, "Superseded by approval"); err != nil {
			return fmt.Errorf("dismiss review %d: %w", r.ID, err)
		}
	}
	return nil
}

// techDebtKind is the marker kind that dedupes tech-debt issues.
const techDebtKind = "tech-debt"

// techDebtKey identifies a finding independently of wording details:
// file plus the normalised text.
func techDebtKey(f verdict.Finding) string {
	norm := strings.Join(strings.Fields(strings.ToLower(f.Text)), " ")
	sum := sha256.Sum256([]byte(strings.ToLower(f.File) + "\n" + norm))
	return hex.EncodeToString(sum[:8])
}

// fileTechDebt opens one tech-debt issue per pre-existing finding of
// medium severity or worse, unless an issue with the same key exists (open
// or closed: a closed one was handled or dismissed by a human).
func (a *Agent) fileTechDebt(ctx context.Context, pr forge.PullRequest, out verdict.Output, log zerolog.Logger) {
	var debts []verdict.Finding
	for _, f := range out.Findings {
		if f.Preexisting && f.Severity.AtLeast(verdict.Medium) && strings.TrimSpace(f.Text) != "" {
			debts = append(debts, f)
		}
	}
	if len(debts) == 0 {
		return
	}
	existing, err := a.opts.Forge.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll, Labels: []forge.LabelName{forge.LabelTechDebt}})
	if err != nil {
		log.Warn().Err(err).Msg("list tech-debt issues; not filing")
		return
	}
	origin := a.origin(ctx, pr, log)
	// Only the review bot's own issues say a finding was filed: anyone
	// could open an issue with the marker to keep a finding unfiled.
	known := map[string]bool{}
	for _, is := range existing {
		if m, ok := is.MarkerBy(techDebtKind, a.bot); ok {
			known[m.Fields["key"]] = true
		}
	}
	for _, f := range debts {
		key := techDebtKey(f)
		if known[key] {
			continue
		}
		known[key] = true
		marker, _ := forge.Marker{Kind: techDebtKind, Fields: map[string]string{"key": key, "pr": fmt.Sprint(pr.Number)}}.String()
		loc := f.File
		if f.Line > 0 {
			loc = fmt.Sprintf("%s:%d", f.File, f.Line)
		}
		// The finding is model-written from untrusted code: a forged
		// tech-debt marker in it would suppress the filing of other
		// findings.
		text := neutralise(f.Text)
		title := firstLine(text, 80)
		if f.File != "" {
			title += " (" + f.File + ")"
		}
		body := fmt.Sprintf("%s\nFlagged as pre-existing by the review of #%d.\n\n## Problem\n\n**%s** `%s`: %s\n\n*Filed by the review agent.*\n%s\n",
			marker, pr.Number, f.Severity, neutralise(loc), text, provenance.Marker(origin, fmt.Sprintf("pr-%d", pr.Number)))
		if _, err := a.opts.Forge.CreateIssue(ctx, forge.NewIssue{Title: title, Body: body, Labels: []forge.LabelName{forge.LabelTechDebt}}); err != nil {
			log.Warn().Err(err).Msg("file tech-debt issue")
			continue
		}
		log.Info().Str("key", key).Msg("filed tech-debt issue")
	}
}

func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

package predictor

import (
	"context"
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// VaultRequest is an executable vault action the predictor asks for to
// test an exploited prediction (spec 40 §6 B): a typed value, never TOML
// the model wrote.
type VaultRequest struct {
	// ID is predict-<prediction>-<formula>.
	ID      string
	Formula string
	Context string
	Secrets []string
}

// VaultReceipt says where a request landed: its pull request on the ops
// repository, or the commit of a direct (low-tier) request.
type VaultReceipt struct {
	PR     int64
	Commit string
}

// Vault files vault actions as the vault's requester does: idempotent by
// id, validated with the dispatcher's validator, a pull request awaiting
// an administrator for any tier but low.
type Vault interface {
	Request(ctx context.Context, r VaultRequest) (VaultReceipt, error)
}

// fileForge is what filing does on the forge, as the predictor bot.
type fileForge interface {
	CreateIssue(ctx context.Context, in forge.NewIssue) (forge.Issue, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
	AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	RemoveLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	CloseIssue(ctx context.Context, n int64) error
}

// Body renders the prediction body of p (spec 40 §3.4): the observation,
// then `---` and the theory, confidence, evidence and suggested action
// lines, plus the exploit, re-filing and superseding lines when they
// apply. The model's text is neutralised: it carries no marker.
func Body(p Proposal, supersedes int64) string {
	q := func(s string) string { return forge.Neutralise(strings.TrimSpace(s)) }
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n---\n", q(p.Observation))
	fmt.Fprintf(&b, "**Theory:** %s\n", oneLine(q(p.Theory)))
	fmt.Fprintf(&b, "**Confidence:** %s\n", p.Confidence)
	fmt.Fprintf(&b, "**Evidence checked:** %s\n", oneLine(q(p.EvidenceChecked)))
	fmt.Fprintf(&b, "**Suggested action:** %s\n", oneLine(q(p.SuggestedAction)))
	if p.Kind == Exploit {
		fmt.Fprintf(&b, "**Exploit:** a vault request runs `%s`; focus: %s\n", p.Formula, oneLine(q(p.Focus)))
	}
	if p.Dismissed > 0 {
		fmt.Fprintf(&b, "**Re-files:** #%d (dismissed)\n", p.Dismissed)
		fmt.Fprintf(&b, "**New evidence:** %s\n", oneLine(q(p.NewEvidence)))
	}
	if supersedes > 0 {
		fmt.Fprintf(&b, "**Supersedes:** #%d\n", supersedes)
	}
	return b.String()
}

// VaultRequestOf is the vault request testing exploit p, filed as
// prediction n.
func VaultRequestOf(p Proposal, n int64) VaultRequest {
	return VaultRequest{
		ID:      fmt.Sprintf("predict-%d-%s", n, p.Formula),
		Formula: p.Formula,
		Context: fmt.Sprintf("Test prediction #%d: %s — focus: %s", n, oneLine(p.Theory), oneLine(p.Focus)),
		Secrets: []string{},
	}
}

// filed is one prediction a run filed.
type filed struct {
	Issue int64
	Kind  Kind
	// VaultPR (or VaultCommit) is where its vault request landed;
	// VaultErr why it did not.
	VaultPR     int64
	VaultCommit string
	VaultErr    error
	// Superseded is the prediction it closed.
	Superseded int64
}

// file files one decided proposal as the predictor bot: the issue
// labelled prediction/unreviewed, then its vault request, then the
// superseded prediction closed with a comment naming the new one. A
// refused vault request is kept in the result (the prediction stands for
// the planner); any other failure after the issue exists returns the
// issue with the error.
func (a *Agent) file(ctx context.Context, d Decision, origin string) (filed, error) {
	p := d.Proposal
	body := Body(p, d.Supersedes)
	if origin != "" {
		body += "\n" + origin + "\n"
	}
	i, err := a.o.Forge.CreateIssue(ctx, forge.NewIssue{Title: forge.Neutralise(p.Title), Body: body,
		Labels: []forge.LabelName{forge.LabelPredictionUnreviewed}})
	if err != nil {
		return filed{}, fmt.Errorf("file prediction %q: %w", p.Title, err)
	}
	f := filed{Issue: i.Number, Kind: p.Kind}
	if p.Kind == Exploit && a.o.Vault != nil {
		rc, err := a.o.Vault.Request(ctx, VaultRequestOf(p, i.Number))
		if err != nil {
			if ctx.Err() != nil {
				return f, ctx.Err()
			}
			f.VaultErr = fmt.Errorf("vault request for prediction #%d: %w", i.Number, err)
		}
		f.VaultPR, f.VaultCommit = rc.PR, rc.Commit
	}
	if d.Supersedes > 0 {
		if err := a.supersede(ctx, d.Supersedes, i.Number); err != nil {
			return f, err
		}
		f.Superseded = d.Supersedes
	}
	return f, nil
}

// supersede closes prediction old in favour of new: a comment naming the
// new one, then the labels one at a time (a closed prediction carries
// prediction/dismissed, spec 40 §4; any other label stays), then the
// close.
func (a *Agent) supersede(ctx context.Context, old, new int64) error {
	if _, err := a.o.Forge.CreateComment(ctx, old, fmt.Sprintf("Superseded by #%d.", new)); err != nil {
		return fmt.Errorf("supersede #%d: %w", old, err)
	}
	if err := a.o.Forge.AddLabels(ctx, old, forge.LabelPredictionDismissed); err != nil {
		return fmt.Errorf("supersede #%d: %w", old, err)
	}
	if err := a.o.Forge.RemoveLabels(ctx, old, forge.LabelPredictionUnreviewed); err != nil {
		return fmt.Errorf("supersede #%d: %w", old, err)
	}
	if err := a.o.Forge.CloseIssue(ctx, old); err != nil {
		return fmt.Errorf("supersede #%d: %w", old, err)
	}
	return nil
}

package dev

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/text"
)

// cleanupTimeout bounds the forge writes that finish a run; they use a
// context that survives cancellation so a shutdown cannot half-finish.
const cleanupTimeout = 2 * time.Minute

func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// outcomeMarker is the machine-readable line of every outcome comment.
func outcomeMarker(code ledger.Code) string {
	m, err := forge.Marker{Kind: "dev-outcome", Fields: map[string]string{"code": string(code)}}.String()
	if err != nil {
		return ""
	}
	return m
}

// quote prepares untrusted text (model output, issue text, CI logs, git and
// forge errors) for a comment the bot posts: secrets masked, and hidden
// comment openers made visible so that it cannot carry a marker.
func (a *Agent) quote(s string) string { return forge.Neutralise(a.red.String(s)) }

func (a *Agent) stamp() string { return a.o.Now().UTC().Format("2006-01-02T15:04:05Z") }

// terminate stores the outcome (so a restart finishes the bookkeeping) and
// then settles it.
func (a *Agent) terminate(ctx context.Context, st *State, stage Stage, reason ledger.Reason, code ledger.Code, detail string) error {
	st.Reason, st.Code, st.Detail = reason, code, a.red.String(detail)
	if err := a.move(st, stage); err != nil {
		return err
	}
	return a.settle(ctx, nil, st)
}

// settle is the step of every terminal stage: it writes the run's ledger
// record once and removes the state of runs that left nothing to inspect.
func (a *Agent) settle(_ context.Context, _ *snapshot, st *State) error {
	if !st.Recorded {
		rec := ledger.Record{
			Run: fmt.Sprintf("dev-%s-%d-%d", a.o.Project, st.Issue, st.Started.Unix()), Start: st.Started, End: a.o.Now(),
			Project: a.o.Project, Role: string(config.RoleDev), Issue: st.Issue, PR: st.PR,
			Reason: st.Reason, Code: st.Code, Detail: st.Detail, SessionID: st.SessionID, CostUSD: st.CostUSD,
			InputTokens: st.InputTokens, OutputTokens: st.OutputTokens, Turns: st.Turns,
			Wall: a.o.Now().Sub(st.Started), Stages: st.Timeline.stages(),
		}
		if st.run == nil {
			return errors.New("ledger: no run to record the outcome on")
		}
		if err := st.run.Record(rec); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		st.Recorded = true
		if err := a.st.save(*st); err != nil {
			return err
		}
		ev := a.issueLog(*st).Info()
		if st.Reason.Failure() {
			ev = a.issueLog(*st).Warn()
		}
		ev.Str(logx.KeyOutcome, string(st.Reason)).Str("code", string(st.Code)).Float64("cost_usd", st.CostUSD).Msg("run finished")
	}
	if st.Stage == StageDone || st.Stage == StageRefused {
		return a.st.remove(st.Issue)
	}
	return nil
}

// block posts the blocked comment, labels the issue blocked (the assignee
// stays, the worktree is kept for inspection) and ends the run.
func (a *Agent) block(ctx context.Context, st *State, code ledger.Code, why, diag string) error {
	cctx, cancel := detached(ctx)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "### Blocked — issue #%d\n\n| | |\n|---|---|\n| Exit reason | `%s` |\n| Timestamp | %s |\n", st.Issue, code, a.stamp())
	if st.PR > 0 {
		fmt.Fprintf(&b, "| Pull request | #%d |\n", st.PR)
	}
	fmt.Fprintf(&b, "\n%s%s\n", a.mentions(), a.quote(why))
	if diag = strings.TrimSpace(a.quote(diag)); diag != "" {
		fmt.Fprintf(&b, "\n<details><summary>Diagnostic output</summary>\n\n```\n%s\n```\n</details>\n", text.ClipTail(diag, 8000))
	}
	b.WriteString("\nTo retry, remove `blocked` and add `backlog`: the work resumes from the existing branch.\n")
	b.WriteString(outcomeMarker(code))
	if _, err := a.o.Forge.CreateComment(cctx, st.Issue, b.String()); err != nil {
		return err
	}
	if err := a.o.Forge.AddLabels(cctx, st.Issue, forge.LabelBlocked); err != nil {
		return err
	}
	if err := a.o.Forge.RemoveLabels(cctx, st.Issue, forge.LabelInProgress); err != nil {
		return err
	}
	return a.terminate(cctx, st, StageBlocked, ledger.ReasonBlocked, code, why)
}

// escalate hands the issue to the maintainers with a reason: the model's
// (escalated.by_model) or the agent's (a wait that timed out).
func (a *Agent) escalate(ctx context.Context, st *State, code ledger.Code, reason string) error {
	cctx, cancel := detached(ctx)
	defer cancel()
	if reason == "" {
		reason = "(no reason given)"
	}
	body := fmt.Sprintf("### Escalated — issue #%d\n\n| | |\n|---|---|\n| Exit reason | `%s` |\n| Timestamp | %s |\n\n"+
		"%sThe dev agent needs a human decision:\n\n> %s\n\n"+
		"Answer in a comment, then remove `blocked` and add `backlog` to resume from the existing branch.\n%s",
		st.Issue, code, a.stamp(), a.mentions(), a.quote(reason), outcomeMarker(code))
	if _, err := a.o.Forge.CreateComment(cctx, st.Issue, body); err != nil {
		return err
	}
	if err := a.o.Forge.AddLabels(cctx, st.Issue, forge.LabelBlocked); err != nil {
		return err
	}
	if err := a.o.Forge.RemoveLabels(cctx, st.Issue, forge.LabelInProgress); err != nil {
		return err
	}
	return a.terminate(cctx, st, StageEscalated, ledger.ReasonEscalated, code, reason)
}

// mentions @-mentions the maintainers, so that a blocked or escalated
// issue reaches a human rather than waiting in a label; "" without any.
func (a *Agent) mentions() string {
	var b strings.Builder
	for _, m := range a.o.Maintainers {
		if m = strings.TrimPrefix(strings.TrimSpace(m), "@"); m != "" {
			b.WriteString("@" + m + " ")
		}
	}
	return b.String()
}

// merged finishes a merged run: issue closed and clean, worktree gone,
// mirror pushes requested from the vault.
func (a *Agent) merged(ctx context.Context, st *State, sha string) error {
	cctx, cancel := detached(ctx)
	defer cancel()
	log := a.issueLog(*st)
	if err := a.o.Forge.SetAssignees(cctx, st.Issue, nil); err != nil {
		return err
	}
	if err := a.o.Forge.CloseIssue(cctx, st.Issue); err != nil {
		return err
	}
	if err := a.o.Forge.RemoveLabels(cctx, st.Issue, forge.LabelInProgress, forge.LabelBacklog, forge.LabelPriority, forge.LabelBlocked); err != nil {
		return err
	}
	a.removeWorkspace(cctx, st)
	a.queueMirrors(ctx, st.run, sha, a.level(*st) != config.AutonomyAuto)
	log.Info().Str(logx.KeySHA, sha).Msg("merged")
	st.Timeline.Merged = a.o.Now()
	return a.terminate(cctx, st, StageDone, ledger.ReasonMerged, "", fmt.Sprintf("pull request #%d merged", st.PR))
}

// closedUnderUs ends a run whose issue was closed by someone else.
func (a *Agent) closedUnderUs(ctx context.Context, st *State) error {
	if st.PR > 0 {
		pr, err := a.o.Forge.GetPull(ctx, st.PR)
		if err != nil && !errors.Is(err, forge.ErrNotFound) {
			return err
		}
		if pr.Merged {
			return a.merged(ctx, st, pr.MergedSHA)
		}
	}
	// A reopened issue must not look claimed and in progress.
	if err := a.o.Forge.RemoveLabels(ctx, st.Issue, forge.LabelInProgress); err != nil {
		return err
	}
	a.removeWorkspace(ctx, st)
	return a.terminate(ctx, st, StageDone, ledger.ReasonDone, ledger.Code("issue.closed_externally"), "issue closed while in progress")
}

package reproduce

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/runner"
	"github.com/disinto/disinto/lib/text"
)

// Result is how one run ended.
type Result struct {
	// Outcome is the validated answer; zero when the run failed first.
	Outcome Outcome
	// Applied is the transition that was made, nil when none was.
	Applied *Transition
	// Fixes are the fix issues filed; Attachments the screenshots
	// uploaded.
	Fixes       []forge.Issue
	Attachments []forge.Attachment
	// Err is why the run failed before an answer, or why applying it
	// stopped; Attempts the failures counted so far.
	Err      error
	Attempts int
	// Run names the session the outcome came from (its id).
	Run string
	// Interrupted is set when the run stopped because ctx ended.
	Interrupted bool
	// Session is the CLI's result event.
	Session resultEvent
}

// Codes of a run's ledger record.
const (
	codeLockHeld    ledger.Code = "reproduce.lock_held"
	codeRunFailed   ledger.Code = "reproduce.run_failed"
	codeApply       ledger.Code = "reproduce.apply_failed"
	codeExhausted   ledger.Code = "reproduce.exhausted"
	codeInterrupted ledger.Code = "reproduce.interrupted"
	codeVerdictBase             = "reproduce."
)

// record is the ledger record of r for c.
func (r Result) record(c Candidate) ledger.Record {
	rec := ledger.Record{Issue: c.Issue.Number, SessionID: r.Session.SessionID, CostUSD: r.Session.CostUSD,
		Turns: r.Session.NumTurns}
	switch {
	case r.Interrupted:
		rec.Reason, rec.Code = ledger.ReasonInterrupted, codeInterrupted
	case r.Applied == nil && r.Attempts >= MaxAttempts:
		rec.Reason, rec.Code = ledger.ReasonBlocked, codeExhausted
	case r.Applied == nil && errors.Is(r.Err, ErrLockHeld):
		rec.Reason, rec.Code = ledger.ReasonEngineError, codeLockHeld
	case r.Applied == nil:
		rec.Reason, rec.Code = ledger.ReasonEngineError, codeRunFailed
	case r.Err != nil:
		rec.Reason, rec.Code = ledger.ReasonEngineError, codeApply
	case r.Applied.Block:
		rec.Reason, rec.Code = ledger.ReasonBlocked, ledger.Code(codeVerdictBase+string(r.Applied.Verdict))
	default:
		rec.Reason, rec.Code = ledger.ReasonDone, ledger.Code(codeVerdictBase+string(r.Applied.Verdict))
	}
	if r.Err != nil {
		rec.Detail = r.Err.Error()
	} else if r.Applied != nil {
		rec.Detail = fmt.Sprintf("%s: %s", c.Mode, r.Applied.Verdict)
	}
	return rec
}

// Work runs candidate c once: the stack lock, the sidecar, the outcome,
// and the transition it calls for. A run that fails before the session
// answers is counted; at MaxAttempts the issue is labelled blocked with a
// comment saying why.
func (a *Agent) Work(ctx context.Context, c Candidate) Result {
	log := a.o.Log.With().Int64("issue", c.Issue.Number).Str("mode", string(c.Mode)).Logger()
	var res Result
	if p := a.attempts.get(c.Issue.Number).Pending; p != nil && p.Mode == c.Mode {
		// The session answered last time; only applying it failed.
		res = a.apply(ctx, c, p.Outcome, nil, p.Run, true)
	} else {
		res = a.session(ctx, c)
	}
	if res.Applied == nil && ctx.Err() != nil {
		// The daemon is stopping: not the issue's failure, nothing counted.
		res.Interrupted = true
		return res
	}
	if res.Applied == nil {
		if res.Err == nil {
			res.Err = errors.New("nothing applied")
		}
		var p *pending
		if res.Outcome.Outcome != "" {
			p = &pending{Mode: c.Mode, Run: res.Run, Outcome: res.Outcome}
		}
		n, err := a.attempts.fail(c.Issue.Number, a.o.Now(), res.Err, p)
		if err != nil {
			log.Warn().Err(err).Msg("record reproduce attempt")
		}
		res.Attempts = n
		log.Warn().Str("error", a.o.Redactor.Error(res.Err)).Int("attempt", n).Msg("bug-report run failed")
		if n >= MaxAttempts {
			if err := a.block(ctx, c, res.Err, n); err != nil {
				log.Warn().Err(err).Msg("label exhausted bug report blocked")
			}
		}
		return res
	}
	if err := a.attempts.clear(c.Issue.Number); err != nil {
		log.Warn().Err(err).Msg("clear reproduce attempts")
	}
	log.Info().Str("outcome", string(res.Outcome.Outcome)).Int("screenshots", len(res.Attachments)).
		Int("fixes", len(res.Fixes)).Msg("bug-report run done")
	return res
}

// session runs the sidecar and applies its answer.
func (a *Agent) session(ctx context.Context, c Candidate) Result {
	if a.o.Sidecars == nil {
		return Result{Err: errors.New("no Docker engine: sidecars cannot run")}
	}
	release, err := stackLock(a.o.LockDir, a.o.Project)
	if err != nil {
		return Result{Err: err}
	}
	defer release()
	job, err := a.job(ctx, c)
	if err != nil {
		return Result{Err: err}
	}
	out, err := a.o.Sidecars.Run(ctx, job)
	if err != nil && !errors.Is(err, runner.ErrTimeout) {
		return Result{Err: fmt.Errorf("sidecar of #%d: %w", c.Issue.Number, err)}
	}
	shots, log, artErr := readArtifacts(out.Log, forge.MaxAttachment)
	ev, ok := lastResult(log)
	if !ok {
		// The CLI never answered (it crashed, or was killed at the
		// timeout): nothing to act on; counted and retried.
		why := fmt.Sprintf("exit %d", out.ExitCode)
		if out.TimedOut {
			why = "timed out"
		}
		return Result{Err: fmt.Errorf("sidecar of #%d: %s without a session result: %s", c.Issue.Number, why, tail(log, 400))}
	}
	if ev.IsError || ev.Subtype != "success" {
		// The session ended without an answer of its own (an API error,
		// the turn limit): counted and retried like a crash.
		return Result{Session: ev, Err: fmt.Errorf("sidecar of #%d: the session ended with %s: %s",
			c.Issue.Number, ev.Subtype, tail(ev.Result, 400))}
	}
	o, perr := parseOutcome(c.Mode, ev.Result)
	if perr != nil {
		// The session answered, but not with a valid outcome: the
		// conservative verdict of the mode, said in the comment.
		o = fallback(c.Mode, perr)
	}
	if artErr != nil && !errors.Is(artErr, errNoArtifacts) {
		o.Findings += "\n\n(The screenshots could not be read: " + artErr.Error() + ")"
	}
	run := ev.SessionID
	if run == "" {
		run = strconv.FormatInt(a.o.Now().UnixNano(), 36)
	}
	res := a.apply(ctx, c, o, shots, run, false)
	res.Session = ev
	return res
}

// fallback is the outcome of a session whose answer is not a valid
// outcome: needs-triage (reproduce, triage), still-reproduces (verify).
func fallback(m Mode, cause error) Outcome {
	v := NeedsTriage
	if m == ModeVerify {
		v = StillReproduces
	}
	return Outcome{Outcome: v, Findings: "The session gave no valid outcome (" + cause.Error() + ")."}
}

// job is the sidecar job of c: the rendered formula as the prompt.
func (a *Agent) job(ctx context.Context, c Candidate) (runner.Job, error) {
	f, err := a.o.Formulas(c.Mode.formulaName())
	if err != nil {
		return runner.Job{}, fmt.Errorf("formula %s: %w", c.Mode.formulaName(), err)
	}
	red := a.o.Redactor.String
	blocks := []formula.Block{{Title: fmt.Sprintf("The bug report #%d", c.Issue.Number),
		Body: red(text.Clip("Title: "+c.Issue.Title+"\n\n"+c.Issue.Body, maxReport)), Untrusted: true}}
	if c.Mode != ModeReproduce {
		earlier, err := a.earlierFindings(ctx, c.Issue.Number)
		if err != nil {
			return runner.Job{}, err
		}
		if earlier != "" {
			blocks = append(blocks, formula.Block{Title: "Findings of the earlier runs", Body: red(earlier), Untrusted: true})
		}
	}
	if len(c.Fixes) > 0 {
		var b strings.Builder
		for _, fx := range c.Fixes {
			fmt.Fprintf(&b, "- #%d %s (%s)\n", fx.Number, fx.Title, fx.State)
		}
		blocks = append(blocks, formula.Block{Title: "The fix issues, all closed", Body: red(b.String()), Untrusted: true})
	}
	prompt, err := formula.Render(f, formula.RenderInput{
		Role: string(config.RoleReproduce), Project: a.o.Project, Repo: a.o.Repo,
		Vars: map[string]string{
			"issue": strconv.FormatInt(c.Issue.Number, 10), "project": a.o.Project,
			"mode": string(c.Mode), "screenshot_dir": ScreenshotDir,
		},
		Blocks: blocks,
	})
	if err != nil {
		return runner.Job{}, fmt.Errorf("render formula %s for #%d: %w", f.Name, c.Issue.Number, err)
	}
	mcp, err := MCPConfig("", "", "", ScreenshotDir)
	if err != nil {
		return runner.Job{}, err
	}
	return runner.Job{
		ID:   fmt.Sprintf("%s-%d", c.Mode, c.Issue.Number),
		Kind: runner.Mechanical, Script: sessionScript(prompt, mcp, a.o.MaxTurns, a.o.Model),
		Secrets: a.o.Secrets, Env: a.o.Env, Network: a.o.Network,
		Timeout: jobTimeout(f.TimeoutMinutes), Limits: a.o.Limits,
	}, nil
}

// earlierFindings are the comments the agent's bot left on issue n, the
// findings of the runs before this one.
func (a *Agent) earlierFindings(ctx context.Context, n int64) (string, error) {
	cs, err := a.o.Forge.ListComments(ctx, n)
	if err != nil {
		return "", fmt.Errorf("comments of #%d: %w", n, err)
	}
	var b strings.Builder
	for _, cm := range cs {
		if _, ok := cm.MarkerBy(runMarkerKind, a.o.Bot); ok {
			b.WriteString(cm.Body)
			b.WriteString("\n\n")
		}
	}
	return text.ClipTail(strings.TrimSpace(b.String()), maxEarlier), nil
}

// Bounds of the untrusted text in a prompt, which travels base64 in the
// sidecar's script (lib/runner takes at most 256 KiB of it).
const (
	maxReport  = 32 << 10
	maxEarlier = 16 << 10
)

// tail is the last n bytes of s, trimmed.
func tail(s string, n int) string { return text.ClipTail(strings.TrimSpace(s), n) }

package dev

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/phase"
	"github.com/disinto/disinto/lib/text"
)

// maxAfterFailures bounds retries of a failing step: publishing a
// finished session's work, starting a session, advancing an issue.
const maxAfterFailures = 5

// Codes of runs blocked because a background step kept failing.
const (
	codeSessionStart ledger.Code = "engine.session_start"
	codeAfterSession ledger.Code = "engine.after_session"
)

// runSession is the step of every session stage: it prepares the issue's
// workspace, runs the model with the stage's prompt and moves st to
// publishing; a crash or timeout blocks it. When the transcript of a
// session to resume is gone, the run starts over from the full prompt.
func (a *Agent) runSession(ctx context.Context, _ *snapshot, st *State) error {
	ws, err := a.workspace(st.Issue)
	if err != nil {
		return err
	}
	if err := a.chooseBranch(ctx, st, ws.Repo()); err != nil {
		return fmt.Errorf("branch: %w", err)
	}
	st.Worktree = ws.Repo()
	if err := a.o.Git.Prepare(ctx, ws, st.Branch); err != nil {
		if refused, berr := a.refusedCheckout(ctx, st, err); refused {
			return berr
		}
		return fmt.Errorf("workspace: %w", err)
	}
	prompt, resume, err := a.sessionPrompt(ctx, st)
	if err != nil {
		return err
	}
	if st.Stage == StageNudging {
		a.issueLog(*st).Info().Msg("nothing committed; nudging the session once")
	}
	res, err := a.run(ctx, st, prompt, resume)
	if ctx.Err() != nil {
		return errors.Join(ctx.Err(), a.st.save(*st))
	}
	if errors.Is(err, claude.ErrSessionNotFound) && resume != "" {
		// The transcript is gone: start over from the full prompt.
		st.SessionID, st.News = "", ""
		if err := a.move(st, StageImplementing); err != nil {
			return err
		}
		return a.runSession(ctx, nil, st)
	}
	if err != nil && !errors.Is(err, claude.ErrMaxTurns) {
		if serr := a.st.save(*st); serr != nil {
			return serr
		}
		if claude.Transient(err) || errors.Is(err, claude.ErrAuth) {
			return err // the backend's fault: backgroundFailed lets it wait
		}
		return a.crashed(ctx, st, res, err)
	}
	st.Summary, st.StartFailures, st.News, st.BudgetNoted = text.ClipTail(res.Text, 4000), 0, "", false
	return a.move(st, StagePublishing)
}

// run invokes claude once and folds its accounting into st, which the
// caller saves.
func (a *Agent) run(ctx context.Context, st *State, prompt, resume string) (claude.Result, error) {
	ws, err := a.workspace(st.Issue)
	if err != nil {
		return claude.Result{}, err
	}
	// A stale line from an earlier run must never read as this run's answer.
	for _, f := range []string{a.phaseFile(ws), a.resultFile(ws)} {
		if err := phase.Clear(f); err != nil {
			return claude.Result{}, err
		}
	}
	// The session gets no credential: it commits, the agent pushes.
	env := map[string]string{
		formula.EnvPhaseFile:     a.phaseFile(ws),
		formula.EnvResultFile:    a.resultFile(ws),
		formula.EnvBranch:        st.Branch,
		formula.EnvPrimaryBranch: a.o.PrimaryBranch,
		"DISINTO_ISSUE":          strconv.FormatInt(st.Issue, 10),
	}
	if err := a.issueBudget(*st); err != nil {
		return claude.Result{}, err
	}
	log := a.issueLog(*st)
	log.Info().Bool("resume", resume != "").Msg("starting model session")
	if st.Timeline.SessionStarted.IsZero() {
		st.Timeline.SessionStarted = a.o.Now()
	}
	res, err := claude.Call(ctx, a.o.Claude, claude.Spec{Label: fmt.Sprintf("dev-%s-issue-%d", a.o.Project, st.Issue),
		Prompt: prompt, ResumeID: resume, Workspace: ws, Dir: ws.Repo(), Env: env, Logger: log,
		Bounds: claude.Bounds{Model: a.o.Model, Backend: a.o.Backend, MaxTurns: a.lim.MaxTurns, Timeout: a.lim.SessionTimeout}})
	st.CostUSD += res.CostUSD
	st.InputTokens += res.Usage.InputTokens + res.Usage.CacheRead + res.Usage.CacheCreation
	st.OutputTokens += res.Usage.OutputTokens
	st.Turns += res.NumTurns
	if res.SessionID != "" {
		st.SessionID = res.SessionID
	}
	return res, err
}

// crashed blocks the issue after a timeout or a crash, keeping the worktree.
func (a *Agent) crashed(ctx context.Context, st *State, res claude.Result, err error) error {
	if ws, werr := a.workspace(st.Issue); werr != nil {
		a.issueLog(*st).Warn().Str("error", a.red.Error(werr)).Msg("record crashed phase")
	} else if perr := phase.Write(a.phaseFile(ws), phase.Crashed, a.red.Error(err)); perr != nil {
		a.issueLog(*st).Warn().Str("error", a.red.Error(perr)).Msg("record crashed phase")
	}
	code := ledger.CodeClaudeCrashed
	if errors.Is(err, claude.ErrTimeout) {
		code = ledger.CodeClaudeTimeout
	}
	diag := fmt.Sprintf("error: %s\nexit code: %d\nturns: %d\nworktree (kept): %s\n%s",
		a.red.Error(err), res.ExitCode, res.NumTurns, st.Worktree, text.ClipTail(res.Text, 2000))
	return a.block(ctx, st, code, "The model session ended abnormally.", diag)
}

// issueBudget refuses another run of an issue whose runs spent its
// budget, in tokens or in dollars.
func (a *Agent) issueBudget(st State) error {
	lim := a.lim.IssueBudget
	if used := st.InputTokens + st.OutputTokens; lim.Tokens > 0 && used >= lim.Tokens {
		return fmt.Errorf("%w: the issue budget of %d tokens is spent (%d used)", claude.ErrBudgetExhausted, lim.Tokens, used)
	}
	if lim.USD > 0 && st.CostUSD >= lim.USD {
		return fmt.Errorf("%w: the issue budget of $%.2f is spent ($%.2f used)", claude.ErrBudgetExhausted, lim.USD, st.CostUSD)
	}
	return nil
}

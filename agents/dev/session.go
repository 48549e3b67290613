package dev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/phase"
	"github.com/disinto/disinto/lib/sandbox"
)

const nudgeText = "You ended your turn without committing anything new on the branch. If you made changes, commit " +
	"them on the branch with the requested message and write PHASE:awaiting_ci to the phase file. " +
	"If the task should not be done, write the refusal JSON to the result file instead."

// maxAfterFailures bounds retries of the work after a finished session.
const maxAfterFailures = 5

const restartText = "The orchestrator restarted while you were working. Check the worktree (git status, git log), " +
	"finish the task, commit on the branch and write the phase file as instructed before."

// startSession runs the issue's next model session in the background.
func (a *Agent) startSession(ctx context.Context, st State) {
	a.spawn(ctx, st.Issue, func(ctx context.Context) {
		log := a.issueLog(st)
		var err error
		if st.Ran {
			err = a.afterSession(ctx, &st, claude.Result{})
		} else {
			err = a.session(ctx, &st)
		}
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			log.Info().Msg("session interrupted by shutdown; it resumes after the restart")
			return
		}
		if claude.Transient(err) || errors.Is(err, claude.ErrAuth) {
			// The model backend's fault, not the issue's: no strike, the
			// session runs again at the next tick.
			log.Warn().Str(logx.KeyOutcome, claude.Code(err)).Str("error", a.red.Error(err)).
				Msg("model backend unavailable; the session runs again next tick")
			return
		}
		if code, ok := agent.Unavailable(err); ok {
			// Nor is a forge that is down or a connection that broke: no
			// strike toward blocking the issue.
			log.Warn().Str(logx.KeyOutcome, string(code)).Str("error", a.red.Error(err)).
				Msg("forge unavailable; the session step runs again next tick")
			return
		}
		// Both the work after a session and the start of one (worktree,
		// prompt) are retried next tick, a bounded number of times.
		code, why, count := ledger.Code("engine.after_session"), "Publishing the session's work kept failing.", &st.AfterFailures
		if !st.Ran {
			code, why, count = ledger.Code("engine.session_start"), "Starting the model session kept failing.", &st.StartFailures
		}
		*count++
		if *count > maxAfterFailures {
			if berr := a.block(ctx, &st, code, why, a.red.Error(err)); berr != nil {
				log.Error().Str("error", a.red.Error(berr)).Msg("block failed")
			}
			return
		}
		if serr := a.st.save(st); serr != nil {
			log.Error().Str("error", a.red.Error(serr)).Msg("save state")
		}
		log.Error().Str("error", a.red.Error(err)).Msg("session step failed; retried next tick")
	})
}

// session runs one model session for st and acts on what it left behind.
func (a *Agent) session(ctx context.Context, st *State) error {
	ws, err := a.workspace(st.Issue)
	if err != nil {
		return err
	}
	if err := a.o.Git.Prepare(ctx, ws, st.Branch); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	st.Worktree = ws.Repo()
	prompt, resume := st.News, st.SessionID
	switch {
	case st.Stage == StageFixing && st.News != "" && resume != "":
	case resume != "" && st.Resumed:
		p, err := a.resumePrompt(ctx, st)
		if err != nil {
			return err
		}
		prompt = p
	case resume != "":
		prompt = restartText
	default:
		p, err := a.prompt(ctx, st)
		if err != nil {
			return err
		}
		prompt, resume = p, ""
	}
	res, err := a.run(ctx, st, prompt, resume)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, claude.ErrSessionNotFound) && resume != "" {
		// The transcript is gone: start over from the full prompt.
		st.SessionID, st.News = "", ""
		if serr := a.st.save(*st); serr != nil {
			return serr
		}
		return a.session(ctx, st)
	}
	if claude.Transient(err) || errors.Is(err, claude.ErrAuth) {
		return err
	}
	if err != nil && !errors.Is(err, claude.ErrMaxTurns) {
		return a.crashed(ctx, st, res, err)
	}
	return a.afterSession(ctx, st, res)
}

// run invokes claude once and folds its accounting into st.
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
	log := a.issueLog(*st)
	log.Info().Bool("resume", resume != "").Msg("starting model session")
	res, err := a.o.Claude.Run(ctx, claude.Invocation{
		Prompt: prompt, ResumeID: resume, Dir: ws.Repo(), Workspace: ws, Model: a.o.Model, Backend: a.o.Backend,
		MaxTurns: a.lim.MaxTurns, Timeout: a.lim.SessionTimeout, Env: env,
		Label: fmt.Sprintf("dev-%s-issue-%d", a.o.Project, st.Issue), Logger: log,
	})
	st.CostUSD += res.CostUSD
	st.InputTokens += res.Usage.InputTokens + res.Usage.CacheRead + res.Usage.CacheCreation
	st.OutputTokens += res.Usage.OutputTokens
	st.Turns += res.NumTurns
	if res.SessionID != "" {
		st.SessionID = res.SessionID
	}
	st.News, st.StartFailures, st.Resumed = "", 0, false
	st.Ran = ctx.Err() == nil && (err == nil || errors.Is(err, claude.ErrMaxTurns))
	if serr := a.st.save(*st); serr != nil {
		return res, errors.Join(err, serr)
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
		a.red.Error(err), res.ExitCode, res.NumTurns, st.Worktree, clip(res.Text, 2000))
	return a.block(ctx, st, code, "The model session ended abnormally.", diag)
}

// afterSession reads the result and phase files and moves the state on.
func (a *Agent) afterSession(ctx context.Context, st *State, res claude.Result) error {
	ws, err := a.workspace(st.Issue)
	if err != nil {
		return err
	}
	ref, refErr := phase.ReadResult(a.resultFile(ws))
	badResult := errors.Is(refErr, phase.ErrInvalid)
	if refErr != nil && !badResult && !errors.Is(refErr, fs.ErrNotExist) {
		return refErr
	}
	remote, err := a.o.Git.RemoteHead(ctx, st.Branch)
	if err != nil {
		return err
	}
	head, ahead, err := a.o.Git.Collect(ctx, ws, st.Branch)
	if err != nil {
		return err
	}
	// A refusal counts only when nothing was committed for the issue yet.
	if (refErr == nil || badResult) && remote == "" && st.PR == 0 && ahead == 0 {
		if badResult {
			return a.block(ctx, st, ledger.Code("builder.bad_result"),
				"The model wrote a result file this agent does not understand.", a.red.Error(refErr))
		}
		return a.refuse(ctx, st, ref)
	}
	rep, err := a.sessionPhase(ws, st)
	if err != nil {
		return err
	}
	switch rep.Phase {
	case phase.Escalate:
		return a.escalate(ctx, st, ledger.CodeEscalatedByModel, rep.Reason)
	case phase.Failed:
		return a.block(ctx, st, ledger.Code("builder.failed"), "The model gave up on this issue.",
			fmt.Sprintf("reason: %s\n%s", rep.Reason, clip(res.Text, 2000)))
	}
	// awaiting_ci, awaiting_review, done or nothing: whatever was
	// committed goes to CI; nothing committed earns one nudge.
	if ahead == 0 {
		if !st.Nudged && st.SessionID != "" {
			st.Nudged = true
			if err := a.st.save(*st); err != nil {
				return err
			}
			a.issueLog(*st).Info().Msg("nothing committed; nudging the session once")
			res, err := a.run(ctx, st, nudgeText, st.SessionID)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil && !errors.Is(err, claude.ErrMaxTurns) {
				return a.crashed(ctx, st, res, err)
			}
			return a.afterSession(ctx, st, res)
		}
		return a.block(ctx, st, ledger.CodeBuilderNoCommit, "The model session ended without committing anything.",
			fmt.Sprintf("phase: %q\n%s", rep.Phase, clip(res.Text, 2000)))
	}
	if head != remote {
		if err := a.o.Git.Push(ctx, head, st.Branch); err != nil {
			return err
		}
	}
	if err := a.ensurePR(ctx, st, res.Text); err != nil {
		return err
	}
	st.HeadSHA, st.Ran, st.AfterFailures = head, false, 0
	a.await(st, StageAwaitingCI)
	a.issueLog(*st).Info().Str("head", shortSHA(head)).Msg("pushed; waiting for CI")
	return a.st.save(*st)
}

// sessionPhase reads what the session left in its phase file. A missing or
// empty file is no phase; malformed content is logged and read as no phase,
// since what was pushed, not the file, decides what comes next.
func (a *Agent) sessionPhase(ws *sandbox.Workspace, st *State) (phase.State, error) {
	ps, err := phase.Read(a.phaseFile(ws))
	switch {
	case err == nil:
		return ps, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, phase.ErrEmpty):
		return phase.State{}, nil
	case errors.Is(err, phase.ErrInvalid):
		a.issueLog(*st).Warn().Str("error", a.red.Error(err)).Msg("malformed phase file ignored")
		return phase.State{}, nil
	}
	return phase.State{}, err
}

// resumePrompt resumes a run a maintainer sent back: it carries what
// others wrote on the issue since the bot's last outcome comment (the
// blocked or escalated one), so an answer reaches the session.
func (a *Agent) resumePrompt(ctx context.Context, st *State) (string, error) {
	comments, err := a.o.Forge.ListComments(ctx, st.Issue)
	if err != nil {
		return "", err
	}
	me, err := a.identity(ctx)
	if err != nil {
		return "", err
	}
	bots := map[string]bool{me: true}
	for _, b := range a.o.BotUsernames {
		bots[b] = true
	}
	var since []string
	for _, c := range comments {
		if c.Author == me {
			if _, ok := forge.FindMarker(c.Body, "dev-outcome"); ok {
				since = since[:0]
			}
			continue
		}
		if bots[c.Author] {
			continue
		}
		since = append(since, fmt.Sprintf("### @%s (%s):\n\n%s", c.Author, c.Created.UTC().Format("2006-01-02"), strings.TrimSpace(c.Body)))
	}
	answer := "(no new comments)"
	if len(since) > 0 {
		answer = formula.Untrusted(a.red.String(strings.Join(since, "\n\n")))
	}
	return fmt.Sprintf("Work on issue #%d was stopped (blocked or escalated) and a maintainer has sent it back to you. "+
		"Comments on the issue since then:\n\n%s\n\nTake them into account and continue from the existing branch %s "+
		"(and pull request, if there is one; never open another): check the worktree (git status, git log), finish the "+
		"task, commit on the branch and write the phase file as instructed before.", st.Issue, answer, st.Branch), nil
}

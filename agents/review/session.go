package review

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/patch"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/verdict"
)

// Outcome codes of failed review attempts (each also posts an error
// comment that the circuit breaker counts).
const (
	CodeCheckout      ledger.Code = "review.checkout"
	CodePrompt        ledger.Code = "review.prompt"
	CodeNoOutput      ledger.Code = "review.no_output"
	CodeInvalidOutput ledger.Code = "review.invalid_output"
)

// reviewFile is where the model writes its verdict: the outbox of the
// session's workspace.
func reviewFile(ws *sandbox.Workspace) string { return ws.Out("review.json") }

// review runs one review session and publishes its verdict. It runs in a
// tracked background goroutine and records exactly one ledger record.
func (a *Agent) review(ctx context.Context, run *agent.Run, c candidate, log zerolog.Logger) {
	start := a.opts.Now()
	pr, st := c.pr, c.st
	if st.Errors == nil {
		st.Errors = map[string]int{}
	}
	rec := ledger.Record{Start: start, PR: pr.Number}
	finish := func(reason ledger.Reason, code ledger.Code, detail string, res claude.Result) {
		rec.Reason, rec.Code, rec.Detail = reason, code, detail
		rec.SessionID, rec.CostUSD = res.SessionID, res.CostUSD
		rec.InputTokens, rec.OutputTokens, rec.Turns = res.Usage.InputTokens, res.Usage.OutputTokens, res.NumTurns
		rec.End = a.opts.Now()
		rec.Wall = rec.End.Sub(start)
		if err := run.Record(rec); err != nil {
			log.Error().Err(err).Msg("record review outcome")
		}
	}
	fail := func(code ledger.Code, why string, res claude.Result) {
		// Posting must survive shutdown: the breaker counts these.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		st.Errors[pr.HeadSHA]++
		if _, err := a.opts.Forge.CreateComment(cctx, pr.Number, formatError(pr.HeadSHA, why)); err != nil {
			log.Error().Err(err).Msg("post review error comment")
		}
		if err := a.store.save(st); err != nil {
			log.Error().Err(err).Msg("save review state")
		}
		log.Warn().Str(logx.KeyOutcome, string(code)).Int("attempt", st.Errors[pr.HeadSHA]).Msg("review failed: " + why)
		finish(ledger.ReasonEngineError, code, why, res)
	}

	diff := c.diff
	if diff == "" {
		var err error
		if diff, err = a.opts.Forge.PullDiff(ctx, pr.Number); err != nil {
			if unavailable(err, log, finish) {
				return
			}
			log.Error().Err(err).Msg("fetch the diff")
			fail(ledger.CodeForgeUnavailable, "the diff could not be fetched", claude.Result{})
			return
		}
	}
	rereview := st.Head != "" && st.Head != pr.HeadSHA && !st.Verdict.Approved() && st.Verdict != ""
	prevHead := st.Head
	ws, err := a.opts.Checkout.Checkout(ctx, pr.Number, pr.HeadSHA)
	if err != nil {
		if unavailable(err, log, finish) {
			return
		}
		log.Error().Err(err).Msg("check out the pull request head")
		fail(CodeCheckout, "the head commit could not be checked out", claude.Result{})
		return
	}
	p := promptInput{c: c, diff: diff, guard: a.testGuard(ctx, pr, diff, log)}
	if rereview {
		p.re = a.rereviewContext(ctx, c, log)
	}
	outFile := reviewFile(ws)
	_ = os.Remove(outFile)
	inv := claude.Spec{
		Dir:       ws.Repo(),
		Workspace: ws,
		Bounds:    claude.Bounds{Model: a.opts.Model, Backend: a.opts.Backend, MaxTurns: DefaultMaxTurns, Timeout: a.opts.Timeout},
		Env:       map[string]string{formula.EnvReviewFile: outFile},
		Label:     fmt.Sprintf("review-%s-pr-%d", a.opts.Project.Name, pr.Number),
		Logger:    &log,
	}
	if rereview && st.SessionID != "" {
		// The conversation already holds the formula, the full diff and
		// the earlier findings: send only what is new.
		inv.ResumeID = st.SessionID
		inv.Prompt = resumePrompt(p, outFile)
	} else if inv.Prompt, err = a.fullPrompt(ctx, p, outFile, log); err != nil {
		if unavailable(err, log, finish) {
			return
		}
		log.Error().Err(err).Msg("render review prompt")
		fail(CodePrompt, "the review prompt could not be built", claude.Result{})
		return
	}
	res, err := claude.Call(ctx, a.opts.Claude, inv)
	if errors.Is(err, claude.ErrSessionNotFound) && inv.ResumeID != "" {
		log.Info().Msg("review session is gone; starting a fresh one")
		inv.ResumeID = ""
		if inv.Prompt, err = a.fullPrompt(ctx, p, outFile, log); err != nil {
			fail(CodePrompt, "the review prompt could not be built", claude.Result{})
			return
		}
		res, err = claude.Call(ctx, a.opts.Claude, inv)
	}
	if ctx.Err() != nil {
		// Shutdown: nothing was published; the next daemon reviews again.
		finish(ledger.ReasonInterrupted, ledger.CodeEngineShutdown, "shutdown during the review", res)
		return
	}
	out, oerr := verdict.ReadOutput(outFile)
	switch {
	case oerr == nil:
		// A verdict file counts even when the CLI lingered or errored
		// after writing it.
	case errors.Is(err, claude.ErrTimeout):
		fail(ledger.CodeClaudeTimeout, "the review session timed out", res)
		return
	case errors.Is(err, claude.ErrBudgetExhausted):
		// A spent budget holds the review, no strike against the head:
		// one comment says so, and a later tick reviews once it lifts.
		log.Warn().Str(logx.KeyOutcome, claude.Code(err)).Str("error", err.Error()).Msg("budget spent; the review waits")
		if st.BudgetNoted != pr.HeadSHA {
			a.noteBudget(ctx, pr, st, err, log)
		}
		finish(ledger.ReasonEngineError, ledger.CodeBudgetExhausted, "a model budget is spent", res)
		return
	case claude.Transient(err), errors.Is(err, claude.ErrAuth):
		// The backend's fault, not the pull request's: no error comment,
		// no strike against the head; the next tick tries again.
		code := ledger.Code(claude.Code(err))
		log.Warn().Str(logx.KeyOutcome, string(code)).Str("error", err.Error()).Msg("model backend unavailable; review retried next tick")
		finish(ledger.ReasonEngineError, code, "the model backend is unavailable", res)
		return
	case err != nil:
		log.Error().Err(err).Msg("review session")
		fail(ledger.CodeClaudeCrashed, "the review session failed", res)
		return
	case errors.Is(oerr, verdict.ErrNoOutput):
		fail(CodeNoOutput, "the session wrote no verdict file", res)
		return
	default:
		fail(CodeInvalidOutput, "the verdict file was invalid: "+oerr.Error(), res)
		return
	}

	// The guard's findings stand whatever the model concluded.
	out = withGuard(out, p.guard)
	sessionID := res.SessionID
	if sessionID == "" {
		sessionID = st.SessionID
	}
	next := &prState{PR: pr.Number, Head: pr.HeadSHA, Verdict: out.Verdict, Output: &out,
		Round: st.Round + 1, SessionID: sessionID, SyncedHead: pr.HeadSHA,
		// Only the current head's attempts matter from now on.
		Errors: map[string]int{pr.HeadSHA: st.Errors[pr.HeadSHA]}}
	if rereview {
		next.Previous = prevHead
	}
	*st = *next
	if err := a.store.save(st); err != nil {
		log.Error().Err(err).Msg("save review state")
	}
	pubCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := a.publish(pubCtx, pr, st, log); err != nil {
		// The next tick completes publishing from the saved state; a
		// forge that is down or slow is no fault of the review.
		ev := log.Error()
		if code, ok := agent.Unavailable(err); ok {
			ev = log.Warn().Str(logx.KeyOutcome, string(code))
		}
		ev.Err(err).Msg("publish review; will complete on the next tick")
	}
	a.fileTechDebt(pubCtx, pr, out, log)
	if out.Verdict.Approved() {
		// No re-review will resume this conversation.
		if err := a.opts.Checkout.Remove(pubCtx, pr.Number); err != nil {
			log.Warn().Err(err).Msg("remove review worktree")
		}
	}
	_ = os.Remove(outFile)
	log.Info().Str("verdict", string(out.Verdict)).Int("round", st.Round).Bool("rereview", rereview).Msg("reviewed")
	finish(ledger.ReasonReviewed, ledger.Code("review."+strings.ToLower(string(out.Verdict))), string(out.Verdict), res)
}

// unavailable handles a failure that is the forge's or the network's
// (the forge down, git unable to connect, a request past its deadline):
// as with a model backend that is down, the pull request is not at fault,
// so there is no error comment and no strike against its head, only the
// run's record; the next tick tries again. It reports whether err was
// such a failure.
func unavailable(err error, log zerolog.Logger, finish func(ledger.Reason, ledger.Code, string, claude.Result)) bool {
	code, ok := agent.Unavailable(err)
	if ok {
		log.Warn().Str(logx.KeyOutcome, string(code)).Str("error", err.Error()).Msg("forge unavailable; review retried next tick")
		finish(ledger.ReasonEngineError, code, "the forge is unavailable", claude.Result{})
	}
	return ok
}

// fullPrompt renders the review-pr formula with the pull request context.
func (a *Agent) fullPrompt(ctx context.Context, p promptInput, outFile string, log zerolog.Logger) (string, error) {
	// The project's conventions come from its primary branch: a pull
	// request must not instruct its own review.
	repoFS, err := a.opts.Checkout.PrimaryFS(ctx)
	if err != nil {
		return "", err
	}
	f := formula.InForce(a.opts.LiveFormula, a.opts.Formula)
	var lessons string
	if a.opts.Lessons != nil {
		lessons = a.opts.Lessons(ctx)
	}
	var objectives string
	if a.opts.Objectives != nil {
		if text := a.opts.Objectives(ctx, patch.Files(p.diff)); text != "" {
			objectives = formula.Untrusted(text)
		}
	}
	return formula.Render(f, formula.RenderInput{
		Role:       string(config.RoleReview),
		Project:    a.opts.Project.Name,
		Repo:       a.opts.Project.Repo,
		ForgeAPI:   a.opts.Project.APIBase() + "/repos/" + a.opts.Project.Repo,
		TokenEnv:   a.opts.TokenEnv,
		Vars:       map[string]string{"pr": fmt.Sprint(p.c.pr.Number), "affected_objectives": objectives},
		RepoFS:     repoFS,
		Blocks:     a.contextBlocks(p),
		Lessons:    lessons,
		Protocols:  []formula.Protocol{formula.ProtocolReview},
		ReviewFile: outFile,
		Logger:     log,
	})
}

// noteBudget says once per head on the pull request that a spent budget
// holds its review.
func (a *Agent) noteBudget(ctx context.Context, pr forge.PullRequest, st *prState, spent error, log zerolog.Logger) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if _, err := a.opts.Forge.CreateComment(cctx, pr.Number, agent.BudgetNote("The review of "+pr.HeadSHA, spent.Error())); err != nil {
		log.Warn().Err(err).Msg("could not say on the pull request that its review's budget is spent")
		return
	}
	st.BudgetNoted = pr.HeadSHA
	if err := a.store.save(st); err != nil {
		log.Error().Err(err).Msg("save review state")
	}
}

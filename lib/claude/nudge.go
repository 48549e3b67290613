package claude

import (
	"context"
	"fmt"
)

// NudgePolicy inspects a finished run and decides whether to resume the
// session once more with prompt (e.g. "the dev session stopped without
// pushing but left uncommitted changes"). An error ends the nudging.
type NudgePolicy func(ctx context.Context, inv Invocation, res Result) (prompt string, nudge bool, err error)

// Nudge configures RunWithNudge.
type Nudge struct {
	// Policy decides after each run; nil never nudges.
	Policy NudgePolicy
	// Max bounds the extra runs; 0 means 1.
	Max int
	// MaxTurns is --max-turns of a nudge run; 0 means 50.
	MaxTurns int
}

// RunWithNudge runs inv, then asks the policy after every successful run
// whether to resume the same session with a nudge prompt, at most n.Max
// times. It returns the last run's result and error and the number of
// nudges sent.
func RunWithNudge(ctx context.Context, r Runner, inv Invocation, n Nudge) (Result, int, error) {
	res, err := r.Run(ctx, inv)
	if n.Policy == nil {
		return res, 0, err
	}
	limit := n.Max
	if limit <= 0 {
		limit = 1
	}
	turns := n.MaxTurns
	if turns <= 0 {
		turns = 50
	}
	nudges := 0
	for nudges < limit && err == nil && res.SessionID != "" {
		prompt, again, perr := n.Policy(ctx, inv, res)
		if perr != nil {
			return res, nudges, fmt.Errorf("nudge policy: %w", perr)
		}
		if !again {
			break
		}
		next := inv
		next.Prompt = prompt
		next.ResumeID = res.SessionID
		next.MaxTurns = turns
		if next.Label != "" {
			next.Label += "-nudge"
		}
		next.TranscriptPath = ""
		nudges++
		res, err = r.Run(ctx, next)
	}
	return res, nudges, err
}

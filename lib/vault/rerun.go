package vault

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// Errors of Rerun: why an action is not run again.
var (
	// ErrNotApproved: the action waits for an approval it does not have;
	// asking again changes nothing about that.
	ErrNotApproved = errors.New("not approved")
	// ErrNotRun: the action is approved and has not run; the dispatcher
	// runs it, once.
	ErrNotRun = errors.New("approved and not run yet")
	// ErrInvalidAction: the action, as filed, does not validate.
	ErrInvalidAction = errors.New("does not validate")
)

// maxRerunAttempts bounds the attempts of one action.
const maxRerunAttempts = 20

// attemptSuffix matches the id of an attempt after the first: <base>-r<n>.
var attemptSuffix = regexp.MustCompile(`^(.+)-r([0-9]+)$`)

// Rerun returns the action that runs e again: a new attempt, the same
// action under the next attempt's id (<id>-r2, then -r3, …; taken reports
// the ids in use), filed as any request, so the policy decides again
// whether it waits for an administrator. Only an action that ran (a
// result is recorded: it finished, failed, timed out, was left started or
// was dropped) runs again; one that waits for approval is ErrNotApproved,
// one approved and not run yet ErrNotRun.
func Rerun(e Entry, taken func(id string) bool) (Action, error) {
	switch {
	case e.State == StateInvalid:
		return Action{}, fmt.Errorf("vault action %s %w: %s", e.ID, ErrInvalidAction, e.Reason)
	case e.State == StatePending && e.PR > 0:
		return Action{}, fmt.Errorf("vault action %s is %w: pull request #%d awaits an administrator's approval and merge (see disinto vault approve-hint %s)",
			e.ID, ErrNotApproved, e.PR, e.ID)
	case e.State == StatePending:
		return Action{}, fmt.Errorf("vault action %s is %w: %s", e.ID, ErrNotApproved, e.Reason)
	case e.State == StateReady:
		return Action{}, fmt.Errorf("vault action %s is %w (%s): the dispatcher runs it; nothing to run again", e.ID, ErrNotRun, e.Approval)
	case e.State != StateRan || e.Result == nil:
		return Action{}, fmt.Errorf("vault action %s: state %q cannot be run again", e.ID, e.State)
	}
	a := e.Action()
	if a.ID == "" {
		return Action{}, fmt.Errorf("vault action %s, as filed, %w under the current policy and formulas; file a corrected action with disinto vault request",
			e.ID, ErrInvalidAction)
	}
	id, err := nextAttempt(e.ID, taken)
	if err != nil {
		return Action{}, err
	}
	a.ID, a.DispatchMode = id, ""
	a.Context = fmt.Sprintf("%s\n\nAgain, after %s (%s).", a.Context, e.ID, e.Result.Status)
	return a, nil
}

// nextAttempt is the first free attempt id after id.
func nextAttempt(id string, taken func(string) bool) (string, error) {
	base, n := id, 1
	if m := attemptSuffix.FindStringSubmatch(id); m != nil {
		if k, err := strconv.Atoi(m[2]); err == nil && k >= 2 {
			base, n = m[1], k
		}
	}
	for n++; n <= maxRerunAttempts; n++ {
		next := fmt.Sprintf("%s-r%d", base, n)
		if !ValidID(next) {
			return "", fmt.Errorf("vault action %s: the next attempt's id %s is not an action id (at most 63 characters)", id, next)
		}
		if !taken(next) {
			return next, nil
		}
	}
	return "", fmt.Errorf("vault action %s: %d attempts, the most there may be", base, maxRerunAttempts)
}

// Package dev is the dev agent: it turns backlog issues into merged pull
// requests.
//
// Each tick (Agent.Tick) is a cheap reconciliation pass: one listing of the
// project's open issues and one of its open pull requests, from which it
// advances every issue this agent holds (CI, review, merge), adopts work a
// previous process left behind, repairs stale in-progress issues, passes
// the backlog through the dependency gate (deps.go: cycles blocked, one
// status comment per waiting issue), and, when nothing of its own is in
// flight, claims the next ready backlog issue.
//
// The work on one issue is a state machine persisted under
// <data>/state/<project>/issue-<N>/ (state.json, phase file, result file).
// Its transition table is machine.go: for every stage, what it does, the
// one step function that does it, and the stages it may lead to; move,
// the only place a stage changes, checks each move against it. Model
// sessions (`claude -p`, resumed with the session id for CI failures and
// review feedback) run as the runtime's tracked background work; waiting
// for CI and review never blocks a goroutine: each tick advances waiting
// issues. A daemon killed at any instant resumes from the state file and
// the forge.
//
// Files follow the stages: poll.go (tick, claim, adopt), session.go (the
// session stages), prompt.go (every prompt), publish.go (publishing),
// deps.go (dependency waits and cycles of the backlog, before any claim),
// origin.go (an outsider's issue waits for a maintainer's backlog),
// pr.go (the pull request and its ownership), waits.go, ci.go and
// review.go (the waiting stages and the merge; a branch that fell behind
// is rebased by the agent, and only a conflict goes to the session),
// attempt.go (branch names: a fresh attempt after an abandoned pull
// request works on fix/issue-N-k), priorart.go (abandoned pull requests
// shown in the first prompt), refuse.go (refusals), finish.go (the
// terminal stages), autonomy.go, hold.go and approval.go (how far the
// agent goes alone: a head that changes protected paths is pushed only
// once a maintainer approved it, and a merge waits for a maintainer when
// the autonomy level or a protected path wants one).
//
// Stages (drawn from machine.go by go test -run TestDiagram -update):
//
//	(none)            claim      claim a ready backlog issue (one sent back resumes its session), or adopt an own in-progress one
//	                               -> implementing, resuming, awaiting_ci
//	implementing      background run the first session from the dev formula (after a restart: resume it)
//	                               -> publishing, implementing, blocked
//	resuming          background resume the session with the maintainers' answer
//	                               -> publishing, implementing, blocked
//	fixing            background resume the session with the CI failure, the review or a rebase request
//	                               -> publishing, implementing, blocked
//	nudging           background resume the session once to commit what it did
//	                               -> publishing, implementing, blocked
//	publishing        background act on the session's result: refusal, phase, push, pull request; a fix turn that committed nothing is asked once more
//	                               -> awaiting_ci, held, nudging, fixing, refused, escalated, blocked
//	held              tick       keep a head that changes protected paths off the branches until a maintainer approves it, then push it
//	                               -> awaiting_ci, done, blocked
//	awaiting_ci       tick       wait for CI on the head; re-run it after an infrastructure failure
//	                               -> awaiting_review, awaiting_ci, fixing, done, escalated, blocked
//	awaiting_review   tick       wait for a verdict on the head; merge on approval
//	                               -> done, awaiting_approval, awaiting_ci, fixing, escalated, blocked
//	awaiting_approval tick       wait for a maintainer's approval of the approved head (level approve, protected paths); at advisory, for them to merge it
//	                               -> done, awaiting_ci, fixing, blocked
//	done              (ends)     merged, or the issue closed by someone else
//	                               -> (nothing)
//	refused           (ends)     the model refused the issue (too large, already done, unmet dependency)
//	                               -> (nothing)
//	blocked           (ends)     a human must look; relabelled backlog, it is claimed again
//	                               -> (nothing)
//	escalated         (ends)     the maintainers must decide; relabelled backlog, it is claimed again
//	                               -> (nothing)
//
// Blocked is reachable from every live stage: a step that keeps failing
// is bounded, and then its issue is blocked with the error.
package dev

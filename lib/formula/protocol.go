package formula

// Protocol names a coordination contract between a claude session and the
// orchestrator that reads its output. Render appends the contract's text
// for each protocol in RenderInput.Protocols.
type Protocol string

// The contracts. Their wording is shared by the formulas that use them
// (the formulas restate them in their steps; a test keeps both in line).
const (
	// ProtocolPhase: the session reports progress through the phase file.
	ProtocolPhase Protocol = "phase"
	// ProtocolResult: the session may refuse the task through the result file.
	ProtocolResult Protocol = "result"
	// ProtocolReview: the session writes its review as JSON to the review file.
	ProtocolReview Protocol = "review"
)

// Environment variable names the orchestrators set for a session. The
// prompt names them; their values are paths and branch names, never secrets.
const (
	EnvPhaseFile     = "DISINTO_PHASE_FILE"
	EnvResultFile    = "DISINTO_RESULT_FILE"
	EnvReviewFile    = "DISINTO_REVIEW_FILE"
	EnvBranch        = "DISINTO_BRANCH"
	EnvPrimaryBranch = "DISINTO_PRIMARY_BRANCH"
	EnvScratchFile   = "DISINTO_SCRATCH_FILE"
)

// The phase lines a session may write. The runtime alone writes
// PHASE:crashed.
const (
	PhaseAwaitingCI     = "PHASE:awaiting_ci"
	PhaseAwaitingReview = "PHASE:awaiting_review"
	PhaseEscalate       = "PHASE:escalate"
	PhaseFailed         = "PHASE:failed"
	PhaseDone           = "PHASE:done"
)

// Refusal statuses of the result file.
const (
	ResultTooLarge        = "too_large"
	ResultAlreadyDone     = "already_done"
	ResultUnmetDependency = "unmet_dependency"
)

// Review verdicts and finding severities of the review file.
const (
	VerdictApprove        = "APPROVE"
	VerdictRequestChanges = "REQUEST_CHANGES"
	VerdictDiscuss        = "DISCUSS"
)

// ResultSchema is the shape of the result file, as the prompts state it.
const ResultSchema = `{"status": "too_large" | "already_done" | "unmet_dependency", "reason": "...", "evidence": [{"file": "...", "line": N, "note": "..."}], "dependency": N}`

// ReviewSchema is the shape of the review file, as the prompts state it.
const ReviewSchema = `{"verdict": "APPROVE"|"REQUEST_CHANGES"|"DISCUSS", "verdict_reason": "...", "review_markdown": "...", "findings": [{"severity": "critical|high|medium|low|info", "file": "...", "line": N, "text": "...", "preexisting": bool}]}`

const phaseText = `The phase file is how you tell the orchestrator what to do next. Its path is
%s (also in $` + EnvPhaseFile + `). Overwrite it with exactly one line, optionally
followed by a second line ` + "`Reason: <one sentence>`" + `, and then end your turn:

- ` + "`" + PhaseAwaitingCI + "`" + `: your commits are on the branch; the orchestrator pushes it, opens
  or updates the pull request and waits for CI.
- ` + "`" + PhaseAwaitingReview + "`" + `: CI is green (the orchestrator told you so); it now waits for
  the review.
- ` + "`" + PhaseEscalate + "`" + `: a human must decide something; say what in the Reason line.
- ` + "`" + PhaseFailed + "`" + `: you cannot finish and more attempts will not help; say why.
- ` + "`" + PhaseDone + "`" + `: the orchestrator told you the pull request is merged; nothing is left.

The orchestrator opens the pull request, waits for CI and review, and resumes
this same session with the news (a CI failure log, review feedback, a merge
conflict). You work on branch $` + EnvBranch + ` (%s), commit with the message
` + "`fix: <issue title> (#<N>)`" + ` and rebase on origin/$` + EnvPrimaryBranch + ` (%s) when it
moved; the orchestrator refreshes origin before every turn and pushes the
branch after it. You hold no forge credential: never push, never merge, never
close issues and never touch labels.`

const resultText = `If the task should not be done as written, commit nothing and write a single
JSON object to the result file %s (also in $` + EnvResultFile + `):

    ` + ResultSchema + `

- "too_large": the issue needs more than one focused change; the reason says
  how to split it.
- "already_done": the primary branch already does what the issue asks; the
  evidence points at the code that does it.
- "unmet_dependency": another open issue must land first; "dependency" is its
  number.
Every refusal carries evidence (file, line, note) the maintainers can check.
Omit "dependency" unless the status is "unmet_dependency". The orchestrator
reads this file before anything else and posts the refusal for you.`

const reviewText = `Write your review as a single JSON object to the review file %s
(also in $` + EnvReviewFile + `):

    ` + ReviewSchema + `

"review_markdown" is the complete review as the maintainers will read it;
"findings" lists each problem with the file and line it concerns, and
"preexisting" is true when the problem was there before this pull request.
The orchestrator posts the review and applies the verdict; never post to the
forge yourself.`

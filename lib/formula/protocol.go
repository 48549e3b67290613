package formula

import (
	"github.com/disinto/disinto/lib/phase"
	"github.com/disinto/disinto/lib/verdict"
)

// Protocol names a coordination contract between a claude session and the
// orchestrator that reads its output. Render appends the contract's text
// for each protocol in RenderInput.Protocols.
type Protocol string

// The contracts. Their wording is shared by the formulas that use them
// (the formulas restate them in their steps; a test keeps both in line);
// every protocol word in them comes from lib/phase and lib/verdict.
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
	// EnvLessonsFile is the outbox a digest session writes its lessons to.
	EnvLessonsFile = "DISINTO_LESSONS_FILE"
)

// ResultSchema is the shape of the result file, as the prompts state it.
const ResultSchema = `{"status": "` + string(phase.TooLarge) + `" | "` + string(phase.AlreadyDone) + `" | "` +
	string(phase.UnmetDependency) + `", "reason": "...", "evidence": [{"file": "...", "line": N, "note": "..."}], "dependency": N}`

// ReviewSchema is the shape of the review file, as the prompts state it.
const ReviewSchema = `{"verdict": "` + string(verdict.Approve) + `"|"` + string(verdict.RequestChanges) + `"|"` +
	string(verdict.Discuss) + `", "verdict_reason": "...", "review_markdown": "...", "findings": [{"severity": "` +
	string(verdict.Critical) + `|` + string(verdict.High) + `|` + string(verdict.Medium) + `|` + string(verdict.Low) + `|` +
	string(verdict.Info) + `", "file": "...", "line": N, "text": "...", "preexisting": bool}]}`

// Phase lines as the protocol text names them.
const (
	lineAwaitingCI     = phase.Prefix + string(phase.AwaitingCI)
	lineAwaitingReview = phase.Prefix + string(phase.AwaitingReview)
	lineEscalate       = phase.Prefix + string(phase.Escalate)
	lineFailed         = phase.Prefix + string(phase.Failed)
	lineDone           = phase.Prefix + string(phase.Done)
)

const phaseText = `The phase file is how you tell the orchestrator what to do next. Its path is
%s (also in $` + EnvPhaseFile + `). Overwrite it with exactly one line, optionally
followed by a second line ` + "`Reason: <one sentence>`" + `, and then end your turn:

- ` + "`" + lineAwaitingCI + "`" + `: your commits are on the branch; the orchestrator pushes it, opens
  or updates the pull request and waits for CI.
- ` + "`" + lineAwaitingReview + "`" + `: CI is green (the orchestrator told you so); it now waits for
  the review.
- ` + "`" + lineEscalate + "`" + `: a human must decide something; say what in the Reason line.
- ` + "`" + lineFailed + "`" + `: you cannot finish and more attempts will not help; say why.
- ` + "`" + lineDone + "`" + `: the orchestrator told you the pull request is merged; nothing is left.

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

- "` + string(phase.TooLarge) + `": the issue needs more than one focused change; the reason says
  how to split it.
- "` + string(phase.AlreadyDone) + `": the primary branch already does what the issue asks; the
  evidence points at the code that does it.
- "` + string(phase.UnmetDependency) + `": another open issue must land first; "dependency" is its
  number.
Every refusal carries evidence (file, line, note) the maintainers can check.
Omit "dependency" unless the status is "` + string(phase.UnmetDependency) + `". The orchestrator
reads this file before anything else and posts the refusal for you.`

const reviewText = `Write your review as a single JSON object to the review file %s
(also in $` + EnvReviewFile + `):

    ` + ReviewSchema + `

"review_markdown" is the complete review as the maintainers will read it;
"findings" lists each problem with the file and line it concerns, and
"preexisting" is true when the problem was there before this pull request.
The orchestrator posts the review and applies the verdict; never post to the
forge yourself.`

package agent

import "time"

// Reporter is implemented by agents that hold work between ticks (an
// issue waiting for CI, a push waiting to be retried), so that status can
// show where each piece of it stands. Report must be cheap (local state
// only, no forge request) and safe to call concurrently with Tick.
type Reporter interface {
	Report() Report
}

// Report is what an agent holds now.
type Report struct {
	// Items are the issues or pull requests in flight.
	Items []Item `json:"items,omitempty"`
	// Pending are deferred side effects still to be done, such as a mirror
	// push that failed and is retried.
	Pending []Pending `json:"pending,omitempty"`
	// Findings and Actions are a supervisor's open findings and the
	// remediations of its last run.
	Findings []Finding `json:"findings,omitempty"`
	Actions  []Action  `json:"actions,omitempty"`
}

// Item is one issue (or pull request) an agent works on.
type Item struct {
	Project string `json:"project"`
	Role    string `json:"role"`
	Issue   int64  `json:"issue,omitempty"`
	PR      int64  `json:"pr,omitempty"`
	// Stage is the agent's stage of the work, in its own words.
	Stage string `json:"stage"`
	// Attempts counts the bounded tries spent so far, by kind (ci,
	// review, rebase, ...); Limits are their bounds.
	Attempts map[string]int `json:"attempts,omitempty"`
	Limits   map[string]int `json:"limits,omitempty"`
	// Started is when the work began; Waiting, when its current wait began
	// (zero when it is not waiting).
	Started time.Time `json:"started"`
	Waiting time.Time `json:"waiting,omitzero"`
	// Human is what the work waits for a human to do (an approval, a
	// merge); "" when it waits for nobody.
	Human string `json:"human,omitempty"`
}

// Pending is one deferred side effect.
type Pending struct {
	Project string `json:"project"`
	Role    string `json:"role"`
	// What it is ("mirror push") and its target ("github").
	What   string `json:"what"`
	Target string `json:"target"`
	// Detail names the thing done (a commit).
	Detail   string    `json:"detail,omitempty"`
	Queued   time.Time `json:"queued"`
	Attempts int       `json:"attempts,omitempty"`
	Next     time.Time `json:"next,omitzero"`
	Error    string    `json:"error,omitempty"`
}

// Finding is one open finding of a supervisor.
type Finding struct {
	Project  string `json:"project"`
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
	// Incident is the issue it is escalated in, 0 when it is not.
	Incident int64     `json:"incident,omitempty"`
	Seen     time.Time `json:"seen"`
}

// Action is one remediation a supervisor made in its last run.
type Action struct {
	Project string    `json:"project"`
	Rule    string    `json:"rule"`
	What    string    `json:"what"`
	Error   string    `json:"error,omitempty"`
	At      time.Time `json:"at"`
}

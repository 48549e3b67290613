package config

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Start says when a scheduled role first runs after the daemon starts.
type Start int

const (
	// StartAfterInterval: a full interval after its last run (the
	// persisted schedule keeps the cadence across restarts).
	StartAfterInterval Start = iota
	// StartAtOnce: at every start; cheap when idle, and in-flight work
	// resumes at once.
	StartAtOnce
	// StartAfterFinish: at start, then an interval after each run ends
	// (the reference supervisor's cadence).
	StartAfterFinish
)

// Access is a collaborator permission a role's bot holds on a repository.
type Access string

// The permissions: none, read, write.
const (
	AccessNone  Access = ""
	AccessRead  Access = "read"
	AccessWrite Access = "write"
)

// Token scope sets of the roles' bots. Reviews, branches, merges and file
// commits are repository scope; issues, labels and comments are issue
// scope; GET /user (identity checks) is user scope.
var (
	// WriterScopes push, review and merge.
	WriterScopes = []string{"write:repository", "write:issue", "read:user"}
	// ReaderScopes read the code and write issues, labels and comments.
	ReaderScopes = []string{"read:repository", "write:issue", "read:user"}
)

// Webhook event types, by what they are about.
var (
	// IssueEvents are a project's issue, comment, review and push
	// deliveries.
	IssueEvents = []string{"issues", "issue_label", "issue_assign", "issue_milestone", "issue_comment",
		"pull_request_comment", "pull_request_review_approved", "pull_request_review_rejected",
		"pull_request_review_comment", "pull_request_review", "pull_request_approved",
		"pull_request_rejected", "push"}
	// PullEvents are a project's pull request and commit status
	// deliveries.
	PullEvents = []string{"pull_request", "pull_request_sync", "pull_request_label", "pull_request_assign",
		"pull_request_review_request", "pull_request_milestone", "status"}
)

// RoleSpec is one row of the role table: what scheduling, webhook
// routing, provisioning, doctor, status and the CLI know of a role. How
// an agent of the role is built is the row's other half, its constructor
// in cmd/disinto.
type RoleSpec struct {
	Name Role
	// Formula is the role's formula ("" for a role without sessions).
	Formula string
	// Scheduled roles are listed by AGENT_ROLES and configured by
	// [roles.<name>]; the others are companions the daemon schedules by
	// the rules below.
	Scheduled bool
	// OptIn roles run only for projects that enable them
	// (`[roles.<name>] enabled = true`).
	OptIn bool
	// Interval is the default cadence; IntervalEnv names the variable
	// (seconds) that overrides it for every project.
	Interval    time.Duration
	IntervalEnv string
	// Stagger is the role's place inside its project's slot, so that a
	// catch-up after an outage does not start every role at once.
	Stagger time.Duration
	Start   Start
	// Follows names the scheduled role whose enablement and cadence a
	// companion takes, Stagger after it (the filer follows the
	// architect). Empty: the companion has its own Interval.
	Follows Role
	// NeedsOps: the role runs only for projects with an ops repository.
	NeedsOps bool
	// Fallback lets the role act as the dev bot when it has no token of
	// its own. Roles that must not write what the dev bot writes (review
	// would approve its own pull requests; the architect, filer and vault
	// hold narrower rights) have none, and are left out without one.
	Fallback bool
	// NeedsPassword: the role pushes as its own bot, so without its
	// password (FORGE_<NAME>_PASS) it has no identity and is left out.
	NeedsPassword bool
	// TokenVars are variables besides FORGE_<NAME>_TOKEN and
	// FORGE_TOKEN_<NAME> that may carry the role's token.
	TokenVars []string
	// Project and Ops are the permissions `disinto init` gives the role's
	// bot on the project and ops repositories; Scopes its token's.
	Project, Ops Access
	Scopes       []string
	// Wakes are the project repository's webhook events that trigger the
	// role; WakesOnOps: any event of the ops repository does.
	Wakes      []string
	WakesOnOps bool
	// Lanes: the role also runs as one agent per local-model lane
	// ([agents.<name>]), each under the job role <name>@<lane>.
	Lanes bool
	// StateDir is the role's state under <data>/state/<project> ("" for
	// the directory itself, which the dev agent's issue-N directories
	// share).
	StateDir string
	// ChorePrefix, when set, marks the role's chore pull requests
	// (branch chore/<role>-…) that the dev bot merges once approved and
	// green.
	ChorePrefix string
}

// DefaultBotUser is the login disinto init creates for the role.
func (s RoleSpec) DefaultBotUser() string { return DefaultBotUser(s.Name) }

// WakesOn reports whether the project's event type triggers the role.
func (s RoleSpec) WakesOn(eventType string) bool { return slices.Contains(s.Wakes, eventType) }

// builtinRoles is the role table, in the order the reference starts the
// scheduled roles (review first, dev after it), then the companions.
var builtinRoles = []RoleSpec{{
	Name: RoleReview, Formula: "review-pr", Scheduled: true,
	Interval: 300 * time.Second, IntervalEnv: "POLL_INTERVAL", Stagger: 0, Start: StartAtOnce,
	TokenVars: []string{"REVIEW_BOT_TOKEN"}, Project: AccessWrite, Ops: AccessRead, Scopes: WriterScopes,
	Wakes: PullEvents, StateDir: "review",
}, {
	Name: RoleDev, Formula: "dev", Scheduled: true,
	Interval: 300 * time.Second, IntervalEnv: "POLL_INTERVAL", Stagger: 2 * time.Second, Start: StartAtOnce,
	Project: AccessWrite, Ops: AccessWrite, Scopes: WriterScopes,
	Wakes: append(append([]string{}, IssueEvents...), PullEvents...), Lanes: true,
}, {
	Name: RoleGardener, Formula: "run-gardener", Scheduled: true,
	Interval: 6 * time.Hour, IntervalEnv: "GARDENER_INTERVAL", Stagger: 30 * time.Second,
	Fallback: true, Project: AccessWrite, Ops: AccessWrite, Scopes: WriterScopes,
	StateDir: "gardener", ChorePrefix: "chore/gardener-",
}, {
	Name: RoleArchitect, Formula: "run-architect", Scheduled: true,
	Interval: 6 * time.Hour, IntervalEnv: "ARCHITECT_INTERVAL", Stagger: 60 * time.Second,
	NeedsOps: true, Project: AccessRead, Ops: AccessWrite, Scopes: WriterScopes, StateDir: "architect",
}, {
	Name: RolePlanner, Formula: "run-planner", Scheduled: true,
	Interval: 12 * time.Hour, IntervalEnv: "PLANNER_INTERVAL", Stagger: 90 * time.Second,
	Fallback: true, Project: AccessWrite, Ops: AccessWrite, Scopes: WriterScopes, StateDir: "planner",
}, {
	Name: RolePredictor, Formula: "run-predictor", Scheduled: true,
	Interval: 24 * time.Hour, IntervalEnv: "PREDICTOR_INTERVAL", Stagger: 120 * time.Second,
	Fallback: true, Project: AccessWrite, Ops: AccessRead, Scopes: ReaderScopes, StateDir: "predictor",
}, {
	Name: RoleSupervisor, Formula: "run-supervisor", Scheduled: true,
	Interval: 20 * time.Minute, IntervalEnv: "SUPERVISOR_INTERVAL", Stagger: 10 * time.Second, Start: StartAfterFinish,
	Fallback: true, Project: AccessRead, Ops: AccessRead, Scopes: ReaderScopes, StateDir: "supervisor",
}, {
	// A bug report waits at most a minute for its sidecar, as with the
	// reference dispatcher. reproduce-bot labels, comments on and files
	// issues of the project.
	Name: RoleReproduce, Formula: "reproduce", Scheduled: true, OptIn: true,
	Interval: 60 * time.Second, IntervalEnv: "REPRODUCE_INTERVAL", Stagger: 20 * time.Second,
	Fallback: true, Project: AccessWrite, Scopes: ReaderScopes, StateDir: "reproduce",
}, {
	// The vault dispatcher: a merged vault pull request runs within a
	// minute (spec 70 §5.8), within seconds of its ops event.
	Name: RoleVault, Interval: 60 * time.Second, Start: StartAtOnce, NeedsOps: true, NeedsPassword: true,
	Project: AccessWrite, Ops: AccessWrite, Scopes: WriterScopes, WakesOnOps: true,
}, {
	// filer-bot writes the project's issues and nothing else. A
	// collaborator permission covers every unit of a repository and read
	// is too little to label or close someone else's issue, so it is a
	// writer of the project whose token's scopes keep it from pushing; it
	// reads merged sprints on the ops repository. It runs a few seconds
	// after the architect, at every start (sprints merged while the
	// daemon was down are filed at once), and on every ops event.
	Name: RoleFiler, Follows: RoleArchitect, Stagger: 5 * time.Second, Start: StartAtOnce, NeedsOps: true,
	Project: AccessWrite, Ops: AccessRead, Scopes: ReaderScopes, WakesOnOps: true,
}}

var (
	rolesMu sync.RWMutex
	// registered are the rows RegisterRole added after the built-in ones.
	registered []RoleSpec
)

// RegisterRole adds a row to the role table, after the built-in rows, and
// returns the function that removes it again. It is how a role outside
// this module (or a test's toy role) joins everything that reads the
// table; a name the table holds already is an error.
func RegisterRole(s RoleSpec) (unregister func(), err error) {
	if s.Name == "" || strings.ContainsAny(string(s.Name), " ,@#/") {
		return nil, fmt.Errorf("role table: %q is not a role name", s.Name)
	}
	rolesMu.Lock()
	defer rolesMu.Unlock()
	for _, r := range allSpecsLocked() {
		if r.Name == s.Name {
			return nil, fmt.Errorf("role table: %q is already a role", s.Name)
		}
	}
	registered = append(registered, s)
	return func() {
		rolesMu.Lock()
		defer rolesMu.Unlock()
		registered = slices.DeleteFunc(registered, func(r RoleSpec) bool { return r.Name == s.Name })
	}, nil
}

func allSpecsLocked() []RoleSpec {
	return append(append(make([]RoleSpec, 0, len(builtinRoles)+len(registered)), builtinRoles...), registered...)
}

// RoleSpecs is the role table, in order: the scheduled roles in the order
// the daemon starts them, then the companions.
func RoleSpecs() []RoleSpec {
	rolesMu.RLock()
	defer rolesMu.RUnlock()
	all := allSpecsLocked()
	// Scheduled roles first, each group in table order.
	out := make([]RoleSpec, 0, len(all))
	for _, s := range all {
		if s.Scheduled {
			out = append(out, s)
		}
	}
	for _, s := range all {
		if !s.Scheduled {
			out = append(out, s)
		}
	}
	return out
}

// SpecOf returns the row of role r.
func SpecOf(r Role) (RoleSpec, bool) {
	for _, s := range RoleSpecs() {
		if s.Name == r {
			return s, true
		}
	}
	return RoleSpec{}, false
}

// ScheduledRoles are the roles the daemon runs on an interval, in the
// order the reference starts them.
func ScheduledRoles() []Role { return rolesWhere(func(s RoleSpec) bool { return s.Scheduled }) }

// AllRoles is every role of the table: each has a forge identity.
func AllRoles() []Role { return rolesWhere(func(RoleSpec) bool { return true }) }

// EventRoles returns the roles a project repository's event type wakes,
// in table order; nil means the event is ignored.
func EventRoles(eventType string) []Role {
	return rolesWhere(func(s RoleSpec) bool { return s.WakesOn(eventType) })
}

// OpsEventRoles are the roles any event of a project's ops repository
// wakes.
func OpsEventRoles() []Role { return rolesWhere(func(s RoleSpec) bool { return s.WakesOnOps }) }

// rolesWhere lists, in table order, the roles whose rows keep accepts.
func rolesWhere(keep func(RoleSpec) bool) []Role {
	var out []Role
	for _, s := range RoleSpecs() {
		if keep(s) {
			out = append(out, s.Name)
		}
	}
	return out
}

// Cadence is the interval and cron schedule (nil: none) of spec's role for
// project p: the project's settings of the role, or of the role it
// follows, else the table's default. A cron schedule decides every
// regular run; the interval stays the measure of the backoff.
func (p *Project) Cadence(spec RoleSpec) (time.Duration, *Schedule) {
	role := spec.Name
	if spec.Follows != "" {
		role = spec.Follows
	}
	rs := p.Roles[role]
	d := rs.Interval
	if d <= 0 {
		d = DefaultInterval(spec.Name)
	}
	return d, rs.Schedule
}

package config

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/tomlpos"
)

// Reference defaults.
const (
	DefaultForgeURL      = "http://localhost:3000"
	DefaultPrimaryBranch = "main"
	DefaultBackend       = "anthropic"
	DefaultLocalAPIKey   = "sk-no-key-required"
)

// DefaultInterval is the reference cadence of role r (its row's
// Interval; a companion that follows a role takes that role's).
func DefaultInterval(r Role) time.Duration {
	s, _ := SpecOf(r)
	if s.Follows != "" {
		return DefaultInterval(s.Follows)
	}
	return s.Interval
}

// CI systems a project can declare.
const (
	CINone       = "none"       // no CI: PRs go straight to review
	CIStatuses   = "statuses"   // any CI that posts forge commit statuses
	CIWoodpecker = "woodpecker" // Woodpecker: statuses, plus logs from its API
)

// Project is one validated projects/<name>.toml with defaults applied.
type Project struct {
	File     string // the file it came from
	Name     string
	Repo     string // owner/name
	OpsRepo  string // owner/name
	ForgeURL string // no trailing slash
	// PublicURL is the forge as people reach it, for links (no trailing
	// slash): FORGE_PUBLIC_URL, else ForgeURL.
	PublicURL     string
	PrimaryBranch string
	RepoRoot      string // optional host path of a clone
	OpsRepoRoot   string

	CI      CI
	Mirrors map[string]string     // remote name → git URL
	Roles   map[Role]RoleSettings // every scheduled role
	Agents  map[string]LocalAgent // reference [agents.<name>] local-model agents
	// Limits bound the dev agent's work on each issue ([limits]).
	Limits Limits
	// Budget bounds the model tokens its sessions spend ([budget]).
	Budget Budget
	// Dashboard keeps the factory's dashboard issue on the project's
	// tracker (`dashboard`, default true).
	Dashboard bool
	// Autonomy says how far the factory takes a change alone
	// ([autonomy]).
	Autonomy Autonomy
	// Maintainers are the humans an escalation @-mentions; empty when the
	// file names none (the daemon then asks the environment and the forge).
	Maintainers []string
	// Supervisor holds [services], [monitoring] and ci.stale_minutes.
	Supervisor Supervisor
	// Egress are the hosts its sessions reach through the egress proxy
	// ([egress]).
	Egress Egress
}

// CI describes how the project's CI reports results.
type CI struct {
	System           string // CINone, CIStatuses or CIWoodpecker
	WoodpeckerRepoID int64
}

// RoleSettings is the per-project setting of one scheduled role.
type RoleSettings struct {
	Enabled  bool
	Interval time.Duration
	// Schedule, when set (schedule = "0 2 * * *"), replaces Interval: the
	// role runs at the schedule's activations.
	Schedule *Schedule
	Model    string // empty: the CLI's default
	Backend  string // a key of Config.Backends
}

// LocalAgent is a reference [agents.<name>] section: an extra dev agent
// backed by a local model endpoint, with its own forge identity
// (FORGE_TOKEN_<NAME>), scheduled every PollInterval beside the project's
// default dev agent. Its backend is named after the section.
type LocalAgent struct {
	Name         string
	BaseURL      string
	Model        string
	APIKey       string
	Roles        []Role
	ForgeUser    string // empty: FORGE_BOT_USER_<NAME>, else "<name>-bot" (see Config.LocalBot)
	CompactPct   int
	PollInterval time.Duration
	MaxSessions  int
}

// OwnerName splits Repo into owner and name.
func (p *Project) OwnerName() (owner, name string) {
	owner, name, _ = strings.Cut(p.Repo, "/")
	return owner, name
}

// APIBase is the forge API root, e.g. http://forgejo:3000/api/v1.
func (p *Project) APIBase() string { return p.ForgeURL + "/api/v1" }

// rawProject mirrors the file.
type rawProject struct {
	Name          string                   `toml:"name"`
	Repo          string                   `toml:"repo"`
	OpsRepo       string                   `toml:"ops_repo"`
	ForgeURL      string                   `toml:"forge_url"`
	PrimaryBranch string                   `toml:"primary_branch"`
	RepoRoot      string                   `toml:"repo_root"`
	OpsRepoRoot   string                   `toml:"ops_repo_root"`
	Maintainers   []string                 `toml:"maintainers"`
	Timezone      string                   `toml:"timezone"`
	Dashboard     *bool                    `toml:"dashboard"`
	CI            rawCI                    `toml:"ci"`
	Mirrors       map[string]string        `toml:"mirrors"`
	Limits        rawLimits                `toml:"limits"`
	Budget        rawBudget                `toml:"budget"`
	Autonomy      rawAutonomy              `toml:"autonomy"`
	Roles         map[string]rawRole       `toml:"roles"`
	Agents        map[string]rawLocalAgent `toml:"agents"`
	Backends      map[string]rawBackend    `toml:"backends"`
	Prices        map[string]Price         `toml:"prices"`
	Services      rawServices              `toml:"services"`
	Monitoring    rawMonitoring            `toml:"monitoring"`
	Egress        rawEgress                `toml:"egress"`
}

type rawCI struct {
	System           string `toml:"system"`
	WoodpeckerRepoID int64  `toml:"woodpecker_repo_id"`
	StaleMinutes     *int   `toml:"stale_minutes"`
}

type rawRole struct {
	Enabled  *bool    `toml:"enabled"`
	Interval Duration `toml:"interval"`
	Schedule string   `toml:"schedule"`
	Model    string   `toml:"model"`
	Backend  string   `toml:"backend"`
}

type rawLocalAgent struct {
	BaseURL      string   `toml:"base_url"`
	Model        string   `toml:"model"`
	APIKey       string   `toml:"api_key"`
	Roles        []string `toml:"roles"`
	ForgeUser    string   `toml:"forge_user"`
	CompactPct   *int     `toml:"compact_pct"`
	PollInterval Duration `toml:"poll_interval"`
	MaxSessions  int      `toml:"max_sessions"`
}

type rawBackend struct {
	Kind        string `toml:"kind"`
	BaseURL     string `toml:"base_url"`
	Model       string `toml:"model"`
	APIKeyEnv   string `toml:"api_key_env"`
	MaxSessions int    `toml:"max_sessions"`
}

var (
	slugRe   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.][A-Za-z0-9_.-]*$`)
	nameRe   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	branchRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
)

// validate turns a raw project into a Project, reporting every problem.
// env supplies interval overrides; backends collects [backends.*] and
// [agents.*] definitions for the daemon-wide backend table.
func (r *rawProject) validate(file string, lines *tomlpos.Locator, env Env, envIntervals map[Role]time.Duration, backends *backendSet) (*Project, Problems) {
	var ps Problems
	bad := func(key, format string, args ...any) {
		ps = append(ps, &Problem{File: file, Line: lines.Line(key), Key: key, Msg: fmt.Sprintf(format, args...)})
	}

	p := &Project{
		File:          file,
		Name:          r.Name,
		Repo:          r.Repo,
		OpsRepo:       r.OpsRepo,
		ForgeURL:      strings.TrimRight(r.ForgeURL, "/"),
		PrimaryBranch: r.PrimaryBranch,
		RepoRoot:      r.RepoRoot,
		OpsRepoRoot:   r.OpsRepoRoot,
		Mirrors:       map[string]string{},
		Roles:         map[Role]RoleSettings{},
		Agents:        map[string]LocalAgent{},
	}
	switch {
	case r.Name == "":
		bad("name", "required key is missing")
	case !nameRe.MatchString(r.Name):
		bad("name", "%q is not a valid project name (letters, digits, '.', '_', '-')", r.Name)
	}
	switch {
	case r.Repo == "":
		bad("repo", "required key is missing (want owner/name)")
	case !slugRe.MatchString(r.Repo):
		bad("repo", "%q is not owner/name", r.Repo)
	}
	if p.OpsRepo == "" && r.Repo != "" {
		p.OpsRepo = r.Repo + "-ops"
	} else if p.OpsRepo != "" && !slugRe.MatchString(p.OpsRepo) {
		bad("ops_repo", "%q is not owner/name", p.OpsRepo)
	}
	if p.ForgeURL == "" {
		p.ForgeURL = strings.TrimRight(env.Get("FORGE_URL"), "/")
	}
	if p.ForgeURL == "" {
		p.ForgeURL = DefaultForgeURL
	}
	if u, err := url.Parse(p.ForgeURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("forge_url", "%q is not an http(s) URL", p.ForgeURL)
	} else if u.User != nil {
		bad("forge_url", "must not embed credentials; put tokens in the environment")
	}
	if r.Timezone != "" {
		// Checked whether or not a role has a schedule yet.
		if _, err := time.LoadLocation(r.Timezone); err != nil {
			ps = append(ps, &Problem{File: file, Line: lines.Line("timezone"), Key: "timezone", Msg: fmt.Sprintf("%q is not a known time zone", r.Timezone),
				Fix: `set timezone to an IANA zone name such as "Europe/Berlin" or "UTC", or remove it (then TZ, else UTC)`})
		}
	}
	if p.PrimaryBranch == "" {
		p.PrimaryBranch = DefaultPrimaryBranch
	} else if !branchRe.MatchString(p.PrimaryBranch) || strings.Contains(p.PrimaryBranch, "..") {
		bad("primary_branch", "%q is not a valid branch name", p.PrimaryBranch)
	}

	// CI.
	p.CI = CI{System: r.CI.System, WoodpeckerRepoID: r.CI.WoodpeckerRepoID}
	if r.CI.WoodpeckerRepoID < 0 {
		bad("ci.woodpecker_repo_id", "must not be negative")
	}
	switch p.CI.System {
	case "":
		p.CI.System = CINone
		if r.CI.WoodpeckerRepoID > 0 {
			p.CI.System = CIWoodpecker
		}
	case CINone, CIStatuses:
	case CIWoodpecker:
		if r.CI.WoodpeckerRepoID <= 0 {
			bad("ci.woodpecker_repo_id", "is required when ci.system is \"woodpecker\"")
		}
	default:
		bad("ci.system", "%q is not one of none, statuses, woodpecker", p.CI.System)
	}

	// Mirrors.
	for name, u := range r.Mirrors {
		key := "mirrors." + name
		if !nameRe.MatchString(name) {
			bad(key, "%q is not a valid remote name", name)
		}
		if u == "" {
			bad(key, "empty URL")
		}
		p.Mirrors[name] = u
	}

	p.Limits = r.Limits.validate(bad)
	p.Budget = r.Budget.validate(bad)
	p.Autonomy = r.Autonomy.validate(bad)
	if loc, _, err := scheduleZone(r.Timezone, env); err == nil {
		p.Budget.Zone = loc
	}
	p.Maintainers = validMaintainers(r.Maintainers, bad)
	p.Dashboard = r.Dashboard == nil || *r.Dashboard
	p.Supervisor = r.supervisor(bad)
	p.Egress = r.Egress.validate(bad)

	// Backends declared here join the daemon-wide table.
	for name, b := range r.Backends {
		key := "backends." + name
		be := Backend{Name: name, Kind: b.Kind, BaseURL: strings.TrimRight(b.BaseURL, "/"), Model: b.Model, APIKeyEnv: b.APIKeyEnv, MaxSessions: b.MaxSessions}
		if be.Kind == "" {
			be.Kind = BackendAnthropic
			if be.BaseURL != "" {
				be.Kind = BackendLocal
			}
		}
		for _, m := range be.validate() {
			bad(key+"."+m.field, "%s", m.msg)
		}
		if be.MaxSessions == 0 {
			be.MaxSessions = 1
		}
		if be.APIKeyEnv != "" {
			be.APIKey = env.Get(be.APIKeyEnv)
		}
		if msg := backends.add(be, file); msg != "" {
			bad(key, "%s", msg)
		}
	}

	for model, pr := range r.Prices {
		key := fmt.Sprintf("prices.%q", model)
		if msg := validPrice(pr); msg != "" {
			bad(key, "%s", msg)
			continue
		}
		if msg := backends.addPrice(model, pr, file); msg != "" {
			bad(key, "%s", msg)
		}
	}

	// Local-model agents of the reference: each is also a backend.
	for name, a := range r.Agents {
		key := "agents." + name
		if _, msg, ok := unsupported(key); ok {
			bad(key, "%s", msg)
			continue
		}
		la := LocalAgent{Name: name, BaseURL: strings.TrimRight(a.BaseURL, "/"), Model: a.Model, APIKey: a.APIKey,
			ForgeUser: a.ForgeUser, CompactPct: 60, PollInterval: a.PollInterval.D(), MaxSessions: a.MaxSessions}
		if !nameRe.MatchString(name) {
			bad(key, "%q is not a valid agent name", name)
		}
		if la.BaseURL == "" {
			bad(key+".base_url", "required key is missing")
		} else if u, err := url.Parse(la.BaseURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			bad(key+".base_url", "%q is not an http(s) URL", la.BaseURL)
		}
		if la.Model == "" {
			bad(key+".model", "required key is missing")
		}
		if la.APIKey == "" {
			la.APIKey = DefaultLocalAPIKey
		}
		if a.CompactPct != nil {
			la.CompactPct = *a.CompactPct
			if la.CompactPct < 1 || la.CompactPct > 100 {
				bad(key+".compact_pct", "must be between 1 and 100")
			}
		}
		if la.PollInterval == 0 {
			la.PollInterval = 60 * time.Second
		}
		if la.MaxSessions < 0 {
			bad(key+".max_sessions", "must not be negative")
		}
		if la.MaxSessions == 0 {
			la.MaxSessions = 1
		}
		roles := a.Roles
		if len(roles) == 0 {
			roles = []string{string(RoleDev)}
		}
		for _, s := range roles {
			role := Role(s)
			if err := role.Validate(); err != nil || !role.Scheduled() {
				bad(key+".roles", "unknown role %q", s)
				continue
			}
			if !LocalRoleSupported(role) {
				bad(key+".roles", "role %q is not supported for a local-model agent in this release (supported: %s)", s, joinRoles(LocalRoles()))
				continue
			}
			la.Roles = append(la.Roles, role)
		}
		p.Agents[name] = la
		be := Backend{Name: name, Kind: BackendLocal, BaseURL: la.BaseURL, Model: la.Model, APIKey: la.APIKey, MaxSessions: la.MaxSessions,
			CompactPct: la.CompactPct}
		if msg := backends.add(be, file); msg != "" {
			bad(key, "%s", msg)
		}
	}

	// Roles: defaults, then the environment, then the file.
	for name := range r.Roles {
		if role := Role(name); role.Validate() != nil || !role.Scheduled() {
			bad("roles."+name, "unknown role %q (scheduled roles: %s)", name, joinRoles(ScheduledRoles()))
		}
	}
	for _, role := range ScheduledRoles() {
		on := !role.OptIn()
		s := RoleSettings{Enabled: on, Interval: DefaultInterval(role), Backend: DefaultBackend}
		if d, ok := envIntervals[role]; ok {
			s.Interval = d
		}
		if rr, ok := r.Roles[string(role)]; ok {
			key := "roles." + string(role)
			s.Enabled = boolOr(rr.Enabled, on)
			if rr.Interval != 0 {
				s.Interval = rr.Interval.D()
			}
			if rr.Interval < 0 {
				bad(key+".interval", "must be positive")
			}
			s.Schedule = r.schedule(rr, key, env, bad)
			s.Model = rr.Model
			if rr.Backend != "" {
				s.Backend = rr.Backend
				backends.want(rr.Backend, file, lines.Line(key+".backend"), key+".backend")
			}
		}
		p.Roles[role] = s
	}
	return p, ps
}

// schedule validates the schedule key of the role table key, in the
// project's time zone; nil when the role has none (or a bad one, which
// is reported).
func (r *rawProject) schedule(rr rawRole, key string, env Env, bad func(key, format string, args ...any)) *Schedule {
	if rr.Schedule == "" {
		return nil
	}
	if rr.Interval != 0 {
		bad(key+".schedule", "set either interval or schedule, not both")
		return nil
	}
	loc, zoneKey, err := scheduleZone(r.Timezone, env)
	if err != nil {
		if zoneKey != "timezone" { // validate reports the key, once
			bad(key+".schedule", "environment variable %s: %s", zoneKey, err)
		}
		return nil
	}
	s, err := ParseSchedule(rr.Schedule, loc)
	if err != nil {
		bad(key+".schedule", "%q is not a cron schedule: %s", rr.Schedule, err)
		return nil
	}
	return s
}

// intervalsFromEnv reads the interval variables once for all projects.
func intervalsFromEnv(env Env) (map[Role]time.Duration, Problems) {
	out := map[Role]time.Duration{}
	var ps Problems
	reported := map[string]bool{}
	for _, spec := range RoleSpecs() {
		role, name := spec.Name, spec.IntervalEnv
		if !spec.Scheduled || name == "" {
			continue
		}
		v := env.Get(name)
		if v == "" {
			continue
		}
		var d Duration
		if err := d.UnmarshalTOML(parseEnvNumber(v)); err != nil || d.D() <= 0 {
			if !reported[name] {
				reported[name] = true
				ps = append(ps, &Problem{File: "environment", Key: name, Msg: fmt.Sprintf("%q is not a positive number of seconds", v)})
			}
			continue
		}
		out[role] = d.D()
	}
	return out, ps
}

// parseEnvNumber passes integers to Duration as integers (seconds) and
// anything else as a string, so POLL_INTERVAL=300 and POLL_INTERVAL=5m
// both work.
func parseEnvNumber(v string) any {
	var n int64
	if _, err := fmt.Sscanf(v, "%d", &n); err == nil && fmt.Sprint(n) == v {
		return n
	}
	return v
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// sortedKeys returns the keys of m in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Package config loads the daemon's configuration: project files
// (projects/*.toml, decoded strictly) and the environment (a .env file
// overlaid by the process environment). Load returns a validated value or
// every problem found, each naming the file, the line and the key.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/disinto/disinto/lib/shard"
	"github.com/disinto/disinto/lib/tomlpos"
)

// Default model-runner limits of the reference.
const (
	DefaultClaudeTimeout   = 7200 * time.Second
	DefaultClaudeIdleGrace = 30 * time.Second
)

// DefaultBotUsernames are the logins whose comments count as bot
// comments: the default login of every role of the table.
func DefaultBotUsernames() []string {
	var out []string
	for _, s := range RoleSpecs() {
		out = append(out, s.DefaultBotUser())
	}
	return out
}

// Config is the whole validated configuration of one daemon.
type Config struct {
	Projects []*Project // sorted by name
	Env      Env
	// Roles is AGENT_ROLES: the scheduled roles this daemon runs.
	Roles []Role
	// Backends by name; "anthropic" always exists.
	Backends map[string]Backend
	// Prices are the models' prices ([prices."<model>"] of any project
	// file), by model name.
	Prices map[string]Price
	Claude Claude
	// Policy bounds how long the daemon waits and when it calls itself
	// unhealthy.
	Policy Policy
	// SessionUIDs is the pool of uids isolated model sessions run as.
	SessionUIDs SessionUIDs
	// WebhookSecret verifies forge webhooks (DISINTO_WEBHOOK_SECRET).
	WebhookSecret string
	BotUsernames  []string
	// Woodpecker is the CI server of the woodpecker projects
	// (WOODPECKER_SERVER, WOODPECKER_TOKEN).
	Woodpecker Woodpecker
	// Shard is this replica's place among the agent replicas
	// (DISINTO_REPLICA_SLOT, DISINTO_REPLICAS): it schedules the roles of
	// the projects it owns. The zero value owns every project.
	Shard shard.Shard
}

// Owns reports whether this replica owns project p: it runs p's
// scheduled roles only then.
func (c *Config) Owns(p *Project) bool { return c.Shard.Owns(p.Name) }

// Claude holds the model-runner settings shared by every session.
type Claude struct {
	Bin       string        // CLAUDE_BIN, default "claude" on PATH
	ConfigDir string        // CLAUDE_CONFIG_DIR
	Timeout   time.Duration // CLAUDE_TIMEOUT
	IdleGrace time.Duration // CLAUDE_IDLE_GRACE
}

// Policy is the daemon's failure policy.
type Policy struct {
	// ForgeTimeout bounds one forge request, body included
	// (DISINTO_FORGE_TIMEOUT, default 30 s); retries have their own budget.
	ForgeTimeout time.Duration
	// TickTimeout bounds one agent tick, not the sessions it starts
	// (DISINTO_TICK_TIMEOUT, default 10 min).
	TickTimeout time.Duration
	// UnhealthyAfter is how long every tick of a role may fail before
	// /readyz reports the daemon not ready (DISINTO_UNHEALTHY_AFTER,
	// default 30 min).
	UnhealthyAfter time.Duration
	// ClaimLease is how long the dev agent of one replica holds an issue
	// without renewing its claim before another replica may take it over
	// (DISINTO_CLAIM_LEASE, default 15 min); only with several replicas.
	ClaimLease time.Duration
}

// SessionUIDs is the uid pool of isolated model sessions:
// [Base, Base+Count), from DISINTO_SESSION_UID_BASE and
// DISINTO_SESSION_UID_COUNT. The daemon ends every process of a uid when
// it frees it, so daemons sharing a host (outside containers) need pools
// that do not overlap; zero values mean the sandbox's defaults.
type SessionUIDs struct {
	Base, Count int
}

// minSessionUID keeps session uids clear of system and login accounts.
const minSessionUID = 100000

// Defaults of the failure policy.
const (
	DefaultForgeTimeout   = 30 * time.Second
	DefaultTickTimeout    = 10 * time.Minute
	DefaultUnhealthyAfter = 30 * time.Minute
	DefaultClaimLease     = 15 * time.Minute
)

// Project returns the project called name, or nil.
func (c *Config) Project(name string) *Project {
	for _, p := range c.Projects {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// RoleEnabled reports whether the daemon runs role for project p: the role
// is in AGENT_ROLES and the project does not switch it off.
func (c *Config) RoleEnabled(p *Project, role Role) bool {
	found := false
	for _, r := range c.Roles {
		if r == role {
			found = true
		}
	}
	return found && p.Roles[role].Enabled
}

// RoleRuns reports whether the role table's rules run spec's role for
// project p: a scheduled role when AGENT_ROLES and the project enable it,
// a companion when the role it follows runs (one that follows none
// always does), and either only with an ops repository when it needs
// one. The daemon schedules, and doctor checks, exactly these.
func (c *Config) RoleRuns(p *Project, spec RoleSpec) bool {
	if spec.NeedsOps && p.OpsRepo == "" {
		return false
	}
	switch {
	case spec.Scheduled:
		return c.RoleEnabled(p, spec.Name)
	case spec.Follows != "":
		return c.RoleEnabled(p, spec.Follows)
	}
	return true
}

// Secrets returns every secret value the configuration holds, for the
// redactor.
func (c *Config) Secrets() []string {
	s := c.Env.Secrets()
	for _, b := range c.Backends {
		if b.APIKey != "" && b.APIKey != DefaultLocalAPIKey {
			s = append(s, b.APIKey)
		}
	}
	return s
}

// Load reads every projects/*.toml in projectsDir and the env file, with
// environ (os.Environ()) overriding the env file. A missing projects
// directory or one without project files is an error; a missing env file is
// not. The returned error is Problems when the configuration is invalid:
// every problem of the env file and of every project file, found in one
// pass.
func Load(projectsDir, envFile string, environ []string) (*Config, error) {
	return LoadWith(projectsDir, envFile, environ, nil)
}

// LoadWith is Load that also reads the encrypted env file next to envFile,
// decrypting it with dec (see LoadEnvWith for the precedence).
func LoadWith(projectsDir, envFile string, environ []string, dec Decrypter) (*Config, error) {
	var envProblems Problems
	env, err := LoadEnvWith(envFile, dec, environ)
	if err != nil {
		var p *Problem
		switch {
		case errors.As(err, &envProblems):
		case errors.As(err, &p):
			envProblems = Problems{p}
		default:
			return nil, fmt.Errorf("%s: %w", envFile, err)
		}
		// The project files are still checked, against the process
		// environment alone, so one pass reports everything.
		env, _ = LoadEnv("", environ)
	}
	files, err := filepath.Glob(filepath.Join(projectsDir, "*.toml"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", projectsDir, err)
	}
	if len(files) == 0 {
		if _, err := os.Stat(projectsDir); err != nil {
			return nil, invalid(Problems{{File: projectsDir, Msg: "projects directory not found",
				Fix: "name the directory of the project files with --projects-dir or DISINTO_PROJECTS_DIR, or run disinto init to write one"}})
		}
		return nil, invalid(Problems{{File: projectsDir, Msg: "no project files (*.toml); copy projects/example.toml.example or run disinto init",
			Fix: "copy projects/example.toml.example to " + filepath.Join(projectsDir, "<name>.toml") + " and edit it, or run disinto init"}})
	}
	sort.Strings(files)
	srcs := make(map[string][]byte, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read project file: %w", err)
		}
		srcs[f] = data
	}
	cfg, err := Parse(srcs, env)
	if len(envProblems) == 0 {
		return cfg, err
	}
	var ps Problems
	errors.As(err, &ps)
	return nil, invalid(append(envProblems, ps...))
}

// Parse validates project files given as path → content, with env. It is
// what Load calls after reading the files, and what tests call directly.
func Parse(files map[string][]byte, env Env) (*Config, error) {
	var ps Problems
	c := &Config{Env: env, BotUsernames: DefaultBotUsernames()}
	backends := newBackendSet(env)
	envIntervals, eps := intervalsFromEnv(env)
	ps = append(ps, eps...)

	names := sortedKeys(files)
	byName := map[string]string{}
	for _, file := range names {
		p, fps := parseProject(file, files[file], env, envIntervals, backends)
		ps = append(ps, fps...)
		if p == nil {
			continue
		}
		if p.Name != "" {
			if other, dup := byName[p.Name]; dup {
				ps = append(ps, &Problem{File: file, Line: tomlpos.New(string(files[file])).Line("name"), Key: "name",
					Msg: fmt.Sprintf("project %q is already defined in %s", p.Name, other)})
				continue
			}
			byName[p.Name] = file
		}
		c.Projects = append(c.Projects, p)
	}
	ps = append(ps, backends.check()...)
	c.Backends = backends.defs
	c.Prices = backends.prices
	ps = append(ps, setPublicURLs(c.Projects, env)...)

	roles, err := ParseRoles(env.Get("AGENT_ROLES"))
	if err != nil {
		ps = append(ps, &Problem{File: "environment", Key: "AGENT_ROLES", Msg: err.Error()})
	}
	c.Roles = roles

	c.Claude = Claude{Bin: env.Get("CLAUDE_BIN"), ConfigDir: env.Get("CLAUDE_CONFIG_DIR"), Timeout: DefaultClaudeTimeout, IdleGrace: DefaultClaudeIdleGrace}
	if c.Claude.Bin == "" {
		c.Claude.Bin = "claude"
	}
	c.Policy = Policy{ForgeTimeout: DefaultForgeTimeout, TickTimeout: DefaultTickTimeout, UnhealthyAfter: DefaultUnhealthyAfter, ClaimLease: DefaultClaimLease}
	for _, s := range []struct {
		key string
		dst *time.Duration
	}{{"CLAUDE_TIMEOUT", &c.Claude.Timeout}, {"CLAUDE_IDLE_GRACE", &c.Claude.IdleGrace},
		{"DISINTO_FORGE_TIMEOUT", &c.Policy.ForgeTimeout}, {"DISINTO_TICK_TIMEOUT", &c.Policy.TickTimeout},
		{"DISINTO_UNHEALTHY_AFTER", &c.Policy.UnhealthyAfter}, {"DISINTO_CLAIM_LEASE", &c.Policy.ClaimLease}} {
		if v := env.Get(s.key); v != "" {
			var d Duration
			if err := d.UnmarshalTOML(parseEnvNumber(v)); err != nil || d.D() <= 0 {
				ps = append(ps, &Problem{File: "environment", Key: s.key, Msg: fmt.Sprintf("%q is not a positive number of seconds", v)})
			} else {
				*s.dst = d.D()
			}
		}
	}
	for _, s := range []struct {
		key string
		dst *int
		min int
	}{{"DISINTO_SESSION_UID_BASE", &c.SessionUIDs.Base, minSessionUID}, {"DISINTO_SESSION_UID_COUNT", &c.SessionUIDs.Count, 1}} {
		if v := env.Get(s.key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < s.min || n > 1<<30 {
				ps = append(ps, &Problem{File: "environment", Key: s.key, Msg: fmt.Sprintf("%q is not an integer from %d to %d", v, s.min, 1<<30)})
				continue
			}
			*s.dst = n
		}
	}
	if v := env.Get("CLAUDE_MAX_SESSIONS"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			ps = append(ps, &Problem{File: "environment", Key: "CLAUDE_MAX_SESSIONS", Msg: fmt.Sprintf("%q is not a positive integer", v)})
		}
	}
	if sh, err := shard.Parse(env.Get(shard.EnvSlot), env.Get(shard.EnvReplicas)); err != nil {
		var se *shard.Error
		if errors.As(err, &se) {
			ps = append(ps, &Problem{File: "environment", Key: se.Var, Msg: se.Msg})
		} else {
			ps = append(ps, &Problem{File: "environment", Key: shard.EnvSlot, Msg: err.Error()})
		}
	} else {
		c.Shard = sh
	}
	ps = append(ps, checkClaimLease(c)...)
	c.WebhookSecret = env.Get("DISINTO_WEBHOOK_SECRET")
	var wps Problems
	c.Woodpecker, wps = woodpeckerFromEnv(env, c.Projects)
	ps = append(ps, wps...)
	if v := env.Get("FORGE_BOT_USERNAMES"); v != "" {
		c.BotUsernames = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
	}
	// Every bot user the environment names (FORGE_BOT_USER_<ROLE>, and a
	// local-model agent's FORGE_BOT_USER_<NAME>) is one of the factory's
	// identities: its claims and comments count as a bot's.
	c.BotUsernames = withLocalAgents(withEnvBots(c.BotUsernames, env), c.Projects, env)
	ps = append(ps, checkAutoCompact(env)...)

	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].File != ps[j].File {
			return ps[i].File < ps[j].File
		}
		return ps[i].Line < ps[j].Line
	})
	sort.Slice(c.Projects, func(i, j int) bool { return c.Projects[i].Name < c.Projects[j].Name })
	if err := invalid(ps); err != nil {
		return nil, err
	}
	return c, nil
}

// parseProject decodes one file strictly. A syntax error stops the file;
// a key of the wrong type is a problem and the rest of the file is still
// decoded; unknown keys and validation problems are all reported.
func parseProject(file string, data []byte, env Env, envIntervals map[Role]time.Duration, backends *backendSet) (*Project, Problems) {
	var raw rawProject
	lines := tomlpos.New(string(data))
	md, ps, ok := decodeAll(file, data, lines, &raw, func() { raw = rawProject{} })
	if !ok {
		return nil, ps
	}
	bad := map[string]bool{}
	for _, p := range ps {
		bad[p.Key] = true
	}
	unknown := map[string]bool{}
	for _, k := range md.Undecoded() {
		// Report an unknown table once, not once per key inside it.
		if len(k) > 1 && unknown[k[:len(k)-1].String()] {
			unknown[k.String()] = true
			continue
		}
		unknown[k.String()] = true
		if key, msg, ok := unsupported(k.String()); ok {
			if strings.HasPrefix(key, "agents.") {
				continue // validate reports the section itself
			}
			if !unknown["unsupported:"+key] {
				unknown["unsupported:"+key] = true
				ps = append(ps, &Problem{File: file, Line: lines.Line(key), Key: key, Msg: msg})
			}
			continue
		}
		ps = append(ps, &Problem{File: file, Line: lines.Line(k.String()), Key: k.String(), Msg: "unknown key",
			Fix: fmt.Sprintf("remove %s or correct its name (projects/example.toml.example lists every key)", k)})
	}
	p, vps := raw.validate(file, lines, env, envIntervals, backends)
	for _, vp := range vps {
		// A key that could not be decoded is said once, as a type
		// problem, not again as missing or invalid.
		if !underBadKey(vp.Key, bad) {
			ps = append(ps, vp)
		}
	}
	return p, ps
}

// maxDecodeProblems bounds the problems one file reports before the rest
// of it is given up: each costs one more decode of the file.
const maxDecodeProblems = 100

// decodeAll decodes data into v (reset empties v) and goes on past values
// of the wrong type: each becomes a problem naming its line and key, the
// value is dropped from the file's tree and the tree decoded again, so one
// pass reports every such value. ok is false when the file cannot be
// decoded at all (a syntax error), which is then the only problem.
func decodeAll(file string, data []byte, lines *tomlpos.Locator, v any, reset func()) (md toml.MetaData, ps Problems, ok bool) {
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(v)
	if err == nil {
		return md, nil, true
	}
	var tree map[string]any
	if _, serr := toml.Decode(string(data), &tree); serr != nil {
		line, key, msg := tomlpos.DecodeError(serr)
		return md, Problems{{File: file, Line: line, Key: key, Msg: msg}}, false
	}
	first := true
	for err != nil {
		line, key, msg := tomlpos.DecodeError(err)
		if l := lines.Line(key); l > 0 || !first {
			// Lines of later decodes are those of the re-encoded tree.
			line = l
		}
		plain, want := plainDecodeMessage(msg)
		ps = append(ps, &Problem{File: file, Line: line, Key: key, Msg: plain, Fix: decodeFix(key, want)})
		first = false
		if key == "" || len(ps) >= maxDecodeProblems || !deleteKey(tree, splitKey(key)) {
			return md, ps, false
		}
		var buf bytes.Buffer
		if eerr := toml.NewEncoder(&buf).Encode(tree); eerr != nil {
			return md, ps, false
		}
		reset()
		md, err = toml.NewDecoder(&buf).Decode(v)
	}
	return md, ps, true
}

// underBadKey reports whether key is one of bad or inside one of them.
func underBadKey(key string, bad map[string]bool) bool {
	for k := key; k != ""; {
		if bad[k] {
			return true
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			return false
		}
		k = k[:i]
	}
	return false
}

// splitKey splits a dotted key as toml.Key.String writes it, with quoted
// parts (agents."a.b".model), into its parts.
func splitKey(key string) []string {
	var parts []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c == '"':
			quoted = !quoted
		case c == '\\' && quoted && i+1 < len(key):
			i++
			cur.WriteByte(key[i])
		case c == '.' && !quoted:
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(parts, cur.String())
}

// deleteKey removes the value at path from tree and reports whether there
// was one.
func deleteKey(tree map[string]any, path []string) bool {
	for i, k := range path {
		v, ok := tree[k]
		if !ok {
			return false
		}
		if i == len(path)-1 {
			delete(tree, k)
			return true
		}
		if tree, ok = v.(map[string]any); !ok {
			return false
		}
	}
	return false
}

// withEnvBots returns names plus every FORGE_BOT_USER_* login of env, once
// each, in a stable order.
func withEnvBots(names []string, env Env) []string {
	out := append([]string(nil), names...)
	seen := map[string]bool{}
	for _, n := range out {
		seen[strings.ToLower(n)] = true
	}
	var extra []string
	for k, v := range env.Map() {
		v = strings.TrimSpace(v)
		if strings.HasPrefix(k, "FORGE_BOT_USER_") && v != "" && !seen[strings.ToLower(v)] {
			seen[strings.ToLower(v)] = true
			extra = append(extra, v)
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

// checkClaimLease holds the claim lease of several replicas to at least
// twice each project's dev interval: a dev agent renews its leases at its
// ticks, and one that renewed too seldom would see its work taken over
// while it goes on.
func checkClaimLease(c *Config) Problems {
	spec, ok := SpecOf(RoleDev)
	if c.Shard.Single() || !ok {
		return nil
	}
	for _, p := range c.Projects {
		if d, _ := p.Cadence(spec); c.Policy.ClaimLease < 2*d {
			return Problems{&Problem{File: "environment", Key: "DISINTO_CLAIM_LEASE",
				Msg: fmt.Sprintf("%s is less than twice the dev interval of project %s (%s): the lease would lapse while its holder works", c.Policy.ClaimLease, p.Name, d)}}
		}
	}
	return nil
}

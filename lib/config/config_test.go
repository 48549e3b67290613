package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/shard"
)

func parse(t *testing.T, env map[string]string, files map[string]string) (*config.Config, error) {
	t.Helper()
	src := map[string][]byte{}
	for k, v := range files {
		src[k] = []byte(v)
	}
	return config.Parse(src, config.NewEnv(env))
}

func TestExampleEqualsDefaults(t *testing.T) {
	data, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	full, err := parse(t, nil, map[string]string{"example.toml": string(data)})
	if err != nil {
		t.Fatalf("example does not load:\n%v", err)
	}
	minimal, err := parse(t, nil, map[string]string{"example.toml": "name = \"example\"\nrepo = \"disinto-admin/example\"\n"})
	if err != nil {
		t.Fatal(err)
	}
	got, want := *full.Projects[0], *minimal.Projects[0]
	if !reflect.DeepEqual(got, want) {
		t.Errorf("example differs from the defaults:\nexample: %+v\ndefaults: %+v", got, want)
	}
	// The documented defaults themselves.
	p := want
	checks := []struct {
		name      string
		got, want any
	}{
		{"ops_repo", p.OpsRepo, "disinto-admin/example-ops"},
		{"forge_url", p.ForgeURL, "http://localhost:3000"},
		{"primary_branch", p.PrimaryBranch, "main"},
		{"ci.system", p.CI.System, "none"},
		{"limits", p.Limits, config.Limits{CITimeout: 30 * time.Minute, ReviewTimeout: 3 * time.Hour, CIFixAttempts: 3,
			ReviewRounds: 5, RebaseRounds: 3, MergeAttempts: 3, CILogBytes: 16384, InFlight: 1, CIRecheck: 20 * time.Minute}},
		{"maintainers", len(p.Maintainers), 0},
		{"dev interval", p.Roles[config.RoleDev].Interval, 300 * time.Second},
		{"review interval", p.Roles[config.RoleReview].Interval, 300 * time.Second},
		{"gardener interval", p.Roles[config.RoleGardener].Interval, 6 * time.Hour},
		{"architect interval", p.Roles[config.RoleArchitect].Interval, 6 * time.Hour},
		{"planner interval", p.Roles[config.RolePlanner].Interval, 12 * time.Hour},
		{"predictor interval", p.Roles[config.RolePredictor].Interval, 24 * time.Hour},
		{"supervisor interval", p.Roles[config.RoleSupervisor].Interval, 20 * time.Minute},
		{"claude timeout", full.Claude.Timeout, 7200 * time.Second},
		{"claude idle grace", full.Claude.IdleGrace, 30 * time.Second},
		{"roles", len(full.Roles), len(config.ScheduledRoles())},
		{"anthropic sessions", full.Backends["anthropic"].MaxSessions, 1},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestProblems(t *testing.T) {
	ok := "name = \"a\"\nrepo = \"o/a\"\n"
	tests := []struct {
		name  string
		files map[string]string
		env   map[string]string
		want  []string // substrings, one per expected problem line
	}{
		{"unknown key", map[string]string{"a.toml": ok + "[ci]\nwoodpeker_repo_id = 3\n"},
			nil, []string{"a.toml:4: ci.woodpeker_repo_id: unknown key"}},
		{"unknown table", map[string]string{"a.toml": ok + "\n[monitor]\ncheck_prs = true\n"},
			nil, []string{"a.toml:4: monitor: unknown key"}},
		{"wrong type", map[string]string{"a.toml": ok + "[ci]\nwoodpecker_repo_id = \"seven\"\n"},
			nil, []string{"a.toml:4: ci.woodpecker_repo_id: want an integer, got a string"}},
		{"missing repo", map[string]string{"a.toml": "name = \"a\"\n"},
			nil, []string{"a.toml: repo: required key is missing"}},
		{"missing name", map[string]string{"a.toml": "repo = \"o/a\"\n"},
			nil, []string{"a.toml: name: required key is missing"}},
		{"bad repo slug", map[string]string{"a.toml": "name = \"a\"\nrepo = \"just-a-name\"\n"},
			nil, []string{"a.toml:2: repo: \"just-a-name\" is not owner/name"}},
		{"bad URL", map[string]string{"a.toml": ok + "forge_url = \"ftp:/nowhere\"\n"},
			nil, []string{"a.toml:3: forge_url: \"ftp:/nowhere\" is not an http(s) URL"}},
		{"URL with credentials", map[string]string{"a.toml": ok + "forge_url = \"http://u:secret@forge\"\n"},
			nil, []string{"a.toml:3: forge_url: must not embed credentials"}},
		{"duplicate project", map[string]string{"a.toml": ok, "b.toml": "name = \"a\"\nrepo = \"o/b\"\n"},
			nil, []string{"b.toml:1: name: project \"a\" is already defined in a.toml"}},
		{"syntax error", map[string]string{"a.toml": ok + "[ci\n"},
			nil, []string{"to end table name"}},
		{"bad duration", map[string]string{"a.toml": ok + "[roles.dev]\ninterval = \"soon\"\n"},
			nil, []string{"a.toml:4: roles.dev.interval: "}},
		{"unknown role section", map[string]string{"a.toml": ok + "[roles.deployer]\nenabled = true\n"},
			nil, []string{"a.toml:3: roles.deployer: unknown role \"deployer\""}},
		{"undefined backend", map[string]string{"a.toml": ok + "[roles.dev]\nbackend = \"llama\"\n"},
			nil, []string{"a.toml:4: roles.dev.backend: backend \"llama\" is not defined"}},
		{"local agent without url", map[string]string{"a.toml": ok + "[agents.llama]\nmodel = \"q\"\n"},
			nil, []string{"a.toml:3: agents.llama.base_url: required key is missing"}},
		{"conflicting backends", map[string]string{
			"a.toml": ok + "[backends.l]\nbase_url = \"http://x:1\"\n",
			"b.toml": "name = \"b\"\nrepo = \"o/b\"\n[backends.l]\nbase_url = \"http://y:1\"\n"},
			nil, []string{"b.toml:3: backends.l: backend \"l\" is defined differently in a.toml"}},
		{"bad AGENT_ROLES", map[string]string{"a.toml": ok}, map[string]string{"AGENT_ROLES": "dev,deployer"},
			[]string{"environment: AGENT_ROLES: unknown role \"deployer\""}},
		{"bad POLL_INTERVAL", map[string]string{"a.toml": ok}, map[string]string{"POLL_INTERVAL": "-3"},
			[]string{"environment: POLL_INTERVAL:"}},
		{"session uids among system accounts", map[string]string{"a.toml": ok}, map[string]string{"DISINTO_SESSION_UID_BASE": "1000"},
			[]string{"environment: DISINTO_SESSION_UID_BASE: \"1000\" is not an integer from 100000"}},
		{"no session uids", map[string]string{"a.toml": ok}, map[string]string{"DISINTO_SESSION_UID_COUNT": "0"},
			[]string{"environment: DISINTO_SESSION_UID_COUNT: \"0\" is not an integer from 1"}},
		{"egress address", map[string]string{"a.toml": ok + "[egress]\nallow = [\"proxy.golang.org\", \"169.254.169.254\"]\n"},
			nil, []string{"a.toml:4: egress.allow: \"169.254.169.254\" is not a host name"}},
		{"egress URL", map[string]string{"a.toml": ok + "[egress]\nallow = [\"https://proxy.golang.org\"]\n"},
			nil, []string{"a.toml:4: egress.allow: \"https://proxy.golang.org\" is not a host name"}},
		{"egress port", map[string]string{"a.toml": ok + "[egress]\nallow = [\"git.example.com:70000\"]\n"},
			nil, []string{"a.toml:4: egress.allow: \"git.example.com:70000\""}},
		{"slot beyond the replicas", map[string]string{"a.toml": ok}, map[string]string{"DISINTO_REPLICA_SLOT": "4", "DISINTO_REPLICAS": "3"},
			[]string{"environment: DISINTO_REPLICA_SLOT: \"4\" is not a slot from 1 to 3"}},
		{"replicas not a number", map[string]string{"a.toml": ok}, map[string]string{"DISINTO_REPLICA_SLOT": "1", "DISINTO_REPLICAS": "many"},
			[]string{"environment: DISINTO_REPLICAS: \"many\" is not a number of replicas"}},
		{"lease shorter than the dev interval", map[string]string{"a.toml": ok}, map[string]string{"DISINTO_REPLICA_SLOT": "1", "DISINTO_REPLICAS": "2",
			"DISINTO_CLAIM_LEASE": "5m"}, []string{"environment: DISINTO_CLAIM_LEASE: 5m0s is less than twice the dev interval of project"}},
		{"every problem reported", map[string]string{"a.toml": "name = \"a\"\nrepo = \"x\"\nbogus = 1\n"},
			nil, []string{"a.toml:2: repo:", "a.toml:3: bogus: unknown key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.env, tt.files)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, lines[i], w)
				}
			}
		})
	}
}

// TestEgress: [egress] allow lists host names, *.domains and either
// with a port; none by default.
func TestEgress(t *testing.T) {
	c, err := parse(t, nil, map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\n[egress]\nallow = [\"proxy.golang.org\", \"*.npmjs.org\", \"git.example.com:2222\"]\n",
		"b.toml": "name = \"b\"\nrepo = \"o/b\"\n"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Project("a").Egress.Allow; !slices.Equal(got, []string{"proxy.golang.org", "*.npmjs.org", "git.example.com:2222"}) {
		t.Errorf("a: %v", got)
	}
	if got := c.Project("b").Egress.Allow; len(got) != 0 {
		t.Errorf("b: %v, want nothing", got)
	}
}

// Daemons sharing a host need disjoint session uid pools: freeing a
// workspace ends every process of its uid, another daemon's sessions
// included.
func TestSessionUIDs(t *testing.T) {
	files := map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\n"}
	c, err := parse(t, map[string]string{"DISINTO_SESSION_UID_BASE": "310000", "DISINTO_SESSION_UID_COUNT": "50"}, files)
	if err != nil {
		t.Fatal(err)
	}
	if c.SessionUIDs != (config.SessionUIDs{Base: 310000, Count: 50}) {
		t.Errorf("SessionUIDs = %+v", c.SessionUIDs)
	}
	if c, err = parse(t, nil, files); err != nil || c.SessionUIDs != (config.SessionUIDs{}) {
		t.Errorf("unset: %+v, %v; want the sandbox's defaults", c.SessionUIDs, err)
	}
}

// TestShard: a replica knows its slot and the count from the
// environment, and owns the projects rendezvous hashing gives it; unset,
// it owns every project.
func TestShard(t *testing.T) {
	files := map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\n", "b.toml": "name = \"b\"\nrepo = \"o/b\"\n"}
	c, err := parse(t, nil, files)
	if err != nil || !c.Shard.Single() || !c.Owns(c.Projects[0]) || !c.Owns(c.Projects[1]) {
		t.Fatalf("unset: %+v, %v; want one replica owning both projects", c.Shard, err)
	}
	owners := map[string]int{}
	for slot := 1; slot <= 2; slot++ {
		c, err := parse(t, map[string]string{"DISINTO_REPLICA_SLOT": strconv.Itoa(slot), "DISINTO_REPLICAS": "2"}, files)
		if err != nil {
			t.Fatal(err)
		}
		if c.Shard != (shard.Shard{Slot: slot, Replicas: 2}) {
			t.Errorf("Shard = %+v", c.Shard)
		}
		for _, p := range c.Projects {
			if c.Owns(p) {
				owners[p.Name]++
			}
		}
	}
	if owners["a"] != 1 || owners["b"] != 1 {
		t.Errorf("owners = %v; want each project owned once", owners)
	}
}

func TestPrecedence(t *testing.T) {
	files := map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\n[roles.gardener]\ninterval = 60\n"}
	c, err := parse(t, map[string]string{
		"POLL_INTERVAL":     "120",
		"GARDENER_INTERVAL": "999",
		"FORGE_URL":         "http://forgejo:3000/",
		"AGENT_ROLES":       "review dev,dev",
	}, files)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Projects[0]
	if got := p.Roles[config.RoleDev].Interval; got != 120*time.Second {
		t.Errorf("env POLL_INTERVAL not applied: %v", got)
	}
	if got := p.Roles[config.RoleGardener].Interval; got != time.Minute {
		t.Errorf("file must win over env: %v", got)
	}
	if p.ForgeURL != "http://forgejo:3000" {
		t.Errorf("FORGE_URL default from env: %q", p.ForgeURL)
	}
	if !reflect.DeepEqual(c.Roles, []config.Role{config.RoleReview, config.RoleDev}) {
		t.Errorf("roles = %v", c.Roles)
	}
	if c.RoleEnabled(p, config.RoleGardener) {
		t.Error("gardener is not in AGENT_ROLES")
	}
}

func TestBots(t *testing.T) {
	c, err := parse(t, map[string]string{
		"FORGE_TOKEN":          "dev-token-123",
		"FORGE_PASS":           "dev-pass-123",
		"FORGE_PLANNER_TOKEN":  "plan-token-123",
		"FORGE_PLANNER_PASS":   "plan-pass-123",
		"FORGE_TOKEN_GARDENER": "gard-token-123",
		"FORGE_REVIEW_TOKEN":   "",
	}, map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\n"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		role               config.Role
		token, pass, user  string
		fallback, wantsErr bool
	}{
		{config.RoleDev, "dev-token-123", "dev-pass-123", "dev-bot", false, false},
		{config.RolePlanner, "plan-token-123", "plan-pass-123", "planner-bot", false, false},
		{config.RoleGardener, "gard-token-123", "", "gardener-bot", false, false},
		{config.RolePredictor, "dev-token-123", "dev-pass-123", "dev-bot", true, false},
		{config.RoleReview, "", "", "", false, true},
	}
	for _, tt := range tests {
		b, err := c.Bot(tt.role)
		if (err != nil) != tt.wantsErr {
			t.Errorf("%s: err = %v", tt.role, err)
			continue
		}
		if err != nil {
			if strings.Contains(err.Error(), "dev-token-123") {
				t.Errorf("error leaks a token: %v", err)
			}
			continue
		}
		if b.Token != tt.token || b.Password != tt.pass || b.User != tt.user || b.Fallback != tt.fallback {
			t.Errorf("%s: got %+v", tt.role, b)
		}
	}
	secrets := strings.Join(c.Secrets(), " ")
	for _, s := range []string{"dev-token-123", "dev-pass-123", "plan-token-123", "gard-token-123"} {
		if !strings.Contains(secrets, s) {
			t.Errorf("Secrets() misses %q", s)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, ".env")
	if err := os.WriteFile(envFile, []byte("# comment\nexport FORGE_TOKEN=\"from-file\"\nFORGE_URL='http://f:3000'\nPOLL_INTERVAL=60 # seconds\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.toml"), []byte("name = \"a\"\nrepo = \"o/a\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(dir, envFile, []string{"FORGE_TOKEN=from-process"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Env.Get("FORGE_TOKEN"); got != "from-process" {
		t.Errorf("process env must win: %q", got)
	}
	if c.Projects[0].ForgeURL != "http://f:3000" || c.Projects[0].Roles[config.RoleDev].Interval != time.Minute {
		t.Errorf("env file not applied: %+v", c.Projects[0])
	}
	if _, err := config.Load(filepath.Join(dir, "nope"), envFile, nil); err == nil || !strings.Contains(err.Error(), "projects directory not found") {
		t.Errorf("missing dir: %v", err)
	}
	bad := filepath.Join(dir, "bad.env")
	os.WriteFile(bad, []byte("FORGE_TOKEN=x\nnot a var\n"), 0o600)
	if _, err := config.Load(dir, bad, nil); err == nil || !strings.Contains(err.Error(), "bad.env:2") {
		t.Errorf("bad env file: %v", err)
	}
}

// TestProblemLinesAfterMultilineValues checks that text inside a multi-line
// string or array is not taken for keys or table headers, so the problems
// after it point at the right line.
func TestProblemLinesAfterMultilineValues(t *testing.T) {
	ok := "name = \"a\"\nrepo = \"o/a\"\n"
	tests := []struct {
		name string
		file string
		want []string // one per expected problem, in order
	}{
		{"key after a multi-line string",
			ok + "repo_root = '''\n/srv/a\nbogus = \"in the string\"\n'''\nbogus = 1\n",
			[]string{"a.toml:7: bogus: unknown key"}},
		{"table header inside a multi-line string",
			ok + "repo_root = \"\"\"\n/srv/a\n[ci]\n\"\"\"\nbogus = 1\n[ci]\nstale_minutes = 0\n",
			[]string{"a.toml:7: bogus: unknown key", "a.toml:9: ci.stale_minutes: must be an integer from 1 to 10080"}},
		{"key after a multi-line array",
			ok + "[limits]\nports = [\n  [80, 8080],\n  [443, 8443],\n]\nbogus = 1\n",
			[]string{"a.toml:4: limits.ports: unknown key", "a.toml:8: limits.bogus: unknown key"}},
		{"string in a multi-line array",
			ok + "maintainers = [\n  \"web\",\n  \"bogus = 1\",\n]\nbogus = 1\n",
			[]string{"a.toml:3: maintainers: \"bogus = 1\" is not a forge login", "a.toml:7: bogus: unknown key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, nil, map[string]string{"a.toml": tt.file})
			if err == nil {
				t.Fatal("no error")
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", err, strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestDevBotOverride: a daemon told DISINTO_DEV_BOT=llama runs its dev
// agent as the local bot, never as dev-bot, and fails without its token.
func TestDevBotOverride(t *testing.T) {
	files := map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\n"}
	c, err := parse(t, map[string]string{
		"FORGE_TOKEN": "dev-token-123", "FORGE_PASS": "dev-pass-123",
		"DISINTO_DEV_BOT": "llama", "FORGE_TOKEN_LLAMA": "llama-token-1", "FORGE_PASS_LLAMA": "llama-pass-1",
		"FORGE_BOT_USER_LLAMA": "dev-qwen",
	}, files)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Bot(config.RoleDev)
	if err != nil || b.Token != "llama-token-1" || b.Password != "llama-pass-1" || b.User != "dev-qwen" {
		t.Fatalf("Bot(dev) = %+v, %v", b, err)
	}
	c, err = parse(t, map[string]string{"FORGE_TOKEN": "dev-token-123", "DISINTO_DEV_BOT": "llama"}, files)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Bot(config.RoleDev); err == nil || !strings.Contains(err.Error(), "FORGE_TOKEN_LLAMA") {
		t.Fatalf("missing local token: %v", err)
	}
}

// TestBotWithoutAnyToken: no token at all is an error naming the
// variable, for the dev bot as for the roles that fall back to it.
func TestBotWithoutAnyToken(t *testing.T) {
	cfg := &config.Config{Env: config.NewEnv(nil)}
	for _, role := range []config.Role{config.RoleDev, config.RoleGardener} {
		if _, err := cfg.Bot(role); err == nil || !strings.Contains(err.Error(), "FORGE_TOKEN") {
			t.Errorf("%s bot without tokens: %v", role, err)
		}
	}
}

// TestLocalBotsAreBots: a local-model agent's bot user counts among the
// factory's identities, so two dev agents see each other's claims.
func TestLocalBotsAreBots(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.toml"), []byte("name = \"p\"\nrepo = \"o/p\"\nforge_url = \"http://forge:3000\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir, filepath.Join(dir, "none.env"), []string{"FORGE_BOT_USER_LLAMA=dev-qwen", "FORGE_TOKEN=x"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.BotUsernames, "dev-qwen") || !slices.Contains(cfg.BotUsernames, "dev-bot") {
		t.Fatalf("bot usernames %v lack the local bot", cfg.BotUsernames)
	}
}

package config_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/config"
)

func TestLimitsAndMaintainers(t *testing.T) {
	file := "name = \"a\"\nrepo = \"o/a\"\nmaintainers = [\"alice\", \"@bob\", \"alice\"]\n" +
		"[limits]\nci_timeout = \"2s\"\nreview_timeout = 90\nci_fix_attempts = 1\nreview_rounds = 2\nrebase_rounds = 4\n" +
		"merge_attempts = 5\nci_log_bytes = 4096\nin_flight = 2\nci_recheck = \"90s\"\n"
	cfg, err := parse(t, nil, map[string]string{"a.toml": file})
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Projects[0]
	want := config.Limits{CITimeout: 2 * time.Second, ReviewTimeout: 90 * time.Second, CIFixAttempts: 1, ReviewRounds: 2,
		RebaseRounds: 4, MergeAttempts: 5, CILogBytes: 4096, InFlight: 2, CIRecheck: 90 * time.Second}
	if p.Limits != want {
		t.Errorf("limits = %+v, want %+v", p.Limits, want)
	}
	if !slices.Equal(p.Maintainers, []string{"alice", "bob"}) {
		t.Errorf("maintainers = %v", p.Maintainers)
	}
}

func TestLaneProblems(t *testing.T) {
	ok := "name = \"a\"\nrepo = \"o/a\"\n"
	local := "[agents.llama]\nbase_url = \"http://llama:8080\"\nmodel = \"q\"\n"
	tests := []struct {
		name string
		file string
		env  map[string]string
		want []string
	}{
		{"zero ci_timeout", ok + "[limits]\nci_timeout = \"0s\"\n", nil, []string{"a.toml:4: limits.ci_timeout: must be a positive duration"}},
		{"bad duration", ok + "[limits]\nreview_timeout = \"soon\"\n", nil, []string{"a.toml:4: limits.review_timeout:"}},
		{"zero ci_recheck", ok + "[limits]\nci_recheck = \"0s\"\n", nil, []string{"a.toml:4: limits.ci_recheck: must be a positive duration"}},
		{"zero in_flight", ok + "[limits]\nin_flight = 0\n", nil, []string{"a.toml:4: limits.in_flight: must be an integer from 1 to 64"}},
		{"tiny ci_log_bytes", ok + "[limits]\nci_log_bytes = 10\n", nil, []string{"a.toml:4: limits.ci_log_bytes: must be an integer from 256"}},
		{"unknown limit", ok + "[limits]\nretries = 3\n", nil, []string{"a.toml:4: limits.retries: unknown key"}},
		{"bad maintainer", ok + "maintainers = [\"a b\"]\n", nil, []string{"a.toml:3: maintainers: \"a b\" is not a forge login"}},
		{"zero stale_minutes", ok + "[ci]\nstale_minutes = 0\n", nil, []string{"a.toml:4: ci.stale_minutes: must be an integer from 1 to 10080"}},
		{"monitoring typo", ok + "[monitoring]\ncheck_prs = true\ncheck_prz = true\n", nil, []string{"a.toml:5: monitoring.check_prz: unknown key"}},
		{"disk pct", ok + "[monitoring]\ndisk_crit_pct = 120\n", nil, []string{"a.toml:4: monitoring.disk_crit_pct: must be an integer from 1 to 100"}},
		{"warn above crit", ok + "[monitoring]\ndisk_warn_pct = 90\n", nil, []string{"a.toml:4: monitoring.disk_warn_pct: must not exceed monitoring.disk_crit_pct (80)"}},
		{"bad container", ok + "[services]\ncontainers = [\"ok\", \"no way\"]\n", nil, []string{"a.toml:4: services.containers: \"no way\" is not a container name"}},
		{"local review", ok + local + "roles = [\"dev\", \"review\"]\n", nil,
			[]string{"a.toml:6: agents.llama.roles: role \"review\" is not supported for a local-model agent in this release (supported: dev)"}},
		{"agents.schedule", ok + "[agents.schedule]\ndev = 300\n", nil, []string{"a.toml:3: agents.schedule: is not supported"}},
		{"bad compact_pct", ok + local + "compact_pct = 0\n", nil, []string{"a.toml:6: agents.llama.compact_pct: must be between 1 and 100"}},
		{"bad autocompact env", ok, map[string]string{"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "lots"},
			[]string{"environment: CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: \"lots\" is not an integer from 1 to 100"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.env, map[string]string{"a.toml": tt.file})
			if err == nil {
				t.Fatal("no error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("problems:\n%s\nwant %d", err, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, lines[i], w)
				}
			}
		})
	}
}

func TestLocalDevAgentsAndCompaction(t *testing.T) {
	file := "name = \"a\"\nrepo = \"o/a\"\n[agents.zeta]\nbase_url = \"http://z:1\"\nmodel = \"q\"\ncompact_pct = 40\npoll_interval = \"5s\"\n" +
		"[agents.alpha]\nbase_url = \"http://a:1\"\nmodel = \"q\"\nforge_user = \"dev-alpha\"\n"
	cfg, err := parse(t, map[string]string{"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "70"}, map[string]string{"a.toml": file})
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Projects[0]
	got := cfg.LocalDevAgents(p)
	if len(got) != 2 || got[0].Name != "alpha" || got[1].Name != "zeta" || got[1].PollInterval != 5*time.Second {
		t.Fatalf("local dev agents = %+v", got)
	}
	if b := cfg.Backends["zeta"]; b.CompactPct != 40 || b.BaseURL != "http://z:1" {
		t.Errorf("backend zeta = %+v", b)
	}
	if b := cfg.Backends["alpha"]; b.CompactPct != 60 {
		t.Errorf("backend alpha compacts at %d, want the default 60", b.CompactPct)
	}
	if b := cfg.Backends["anthropic"]; b.CompactPct != 70 {
		t.Errorf("the default backend compacts at %d, want the environment's 70", b.CompactPct)
	}
	if !slices.Contains(cfg.BotUsernames, "dev-alpha") || !slices.Contains(cfg.BotUsernames, "zeta-bot") {
		t.Errorf("bot usernames %v lack the local agents", cfg.BotUsernames)
	}
	// A daemon acting as a local identity itself runs no extra agents.
	cfg, err = parse(t, map[string]string{"DISINTO_DEV_BOT": "alpha", "FORGE_TOKEN_ALPHA": "x"}, map[string]string{"a.toml": file})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.LocalDevAgents(cfg.Projects[0]); len(got) != 0 {
		t.Errorf("with DISINTO_DEV_BOT: local dev agents = %+v", got)
	}
}

// TestSupervisorKeys reads the supervisor's keys of the reference project
// file over the defaults.
func TestSupervisorKeys(t *testing.T) {
	file := "name = \"a\"\nrepo = \"o/a\"\n[ci]\nstale_minutes = 45\n[services]\ncontainers = [\"woodpecker-agent\", \"woodpecker-agent\", \"llama\"]\n" +
		"[monitoring]\ncheck_prs = false\ndisk_warn_pct = 60\ndisk_crit_pct = 75\nmemory_available_mb = 800\nstale_worktree_hours = 5\nlog_max_mb = 2\n"
	c, err := parse(t, nil, map[string]string{"a.toml": file})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Projects[0].Supervisor
	want := config.DefaultSupervisor()
	want.Containers = []string{"woodpecker-agent", "llama"}
	want.CheckPRs = false
	want.DiskWarnPct, want.DiskCritPct, want.MemoryAvailableMB = 60, 75, 800
	want.StaleWorktree, want.LogMaxBytes, want.CIStale = 5*time.Hour, 2<<20, 45*time.Minute
	if !reflect.DeepEqual(s, want) {
		t.Errorf("supervisor = %+v\nwant %+v", s, want)
	}
	c, err = parse(t, nil, map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\n"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Projects[0].Supervisor; !reflect.DeepEqual(got, config.DefaultSupervisor()) {
		t.Errorf("defaults = %+v", got)
	}
}

func TestBudget(t *testing.T) {
	cfg, err := config.Parse(map[string][]byte{"a.toml": []byte("name = \"a\"\nrepo = \"o/a\"\n[budget]\nrun_tokens = 200_000\nday_tokens = 5_000_000\n")}, config.NewEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Projects[0].Budget; got.Run.Tokens != 200_000 || got.Day.Tokens != 5_000_000 || got.Issue != (config.Bound{}) || got.Zone == nil {
		t.Errorf("budget %+v", got)
	}
	_, err = config.Parse(map[string][]byte{"a.toml": []byte("name = \"a\"\nrepo = \"o/a\"\n[budget]\nissue_tokens = 0\nhour_tokens = 1\n")}, config.NewEnv(nil))
	if err == nil || !strings.Contains(err.Error(), "budget.issue_tokens") || !strings.Contains(err.Error(), "hour_tokens") {
		t.Errorf("bad budget: %v", err)
	}
}

func TestPrices(t *testing.T) {
	price := "[prices.\"claude-sonnet-4-5\"]\ninput = 3.0\noutput = 15.0\ncache_read = 0.3\ncache_write = 3.75\n"
	cfg, err := config.Parse(map[string][]byte{
		"a.toml": []byte("name = \"a\"\nrepo = \"o/a\"\n" + price),
		"b.toml": []byte("name = \"b\"\nrepo = \"o/b\"\n" + price),
	}, config.NewEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Prices["claude-sonnet-4-5"]; got != (config.Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}) {
		t.Errorf("price %+v", got)
	}
	_, err = config.Parse(map[string][]byte{
		"a.toml": []byte("name = \"a\"\nrepo = \"o/a\"\n" + price),
		"b.toml": []byte("name = \"b\"\nrepo = \"o/b\"\n[prices.\"claude-sonnet-4-5\"]\ninput = 1.0\n[prices.m]\noutput = -1.0\n"),
	}, config.NewEnv(nil))
	if err == nil || !strings.Contains(err.Error(), "priced differently") || !strings.Contains(err.Error(), "never negative") {
		t.Errorf("conflicting and negative prices: %v", err)
	}
}

// TestBudgetMoneyAndRoles: bounds in dollars and per role; a role's run
// bound tightens the project's, and a bad role or amount is named.
func TestBudgetMoneyAndRoles(t *testing.T) {
	cfg, err := config.Parse(map[string][]byte{"a.toml": []byte(`name = "a"
repo = "o/a"
[budget]
run_tokens = 200_000
issue_usd = 4.5
day_usd = 20.0
[budget.roles.review]
run_tokens = 50_000
run_usd = 0.5
day_tokens = 1_000_000
`)}, config.NewEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Projects[0].Budget
	if b.Issue != (config.Bound{USD: 4.5}) || b.Day != (config.Bound{USD: 20}) || b.Roles[config.RoleReview].Day != (config.Bound{Tokens: 1_000_000}) {
		t.Errorf("budget %+v", b)
	}
	if got := b.RunBound(config.RoleReview); got != (config.Bound{Tokens: 50_000, USD: 0.5}) {
		t.Errorf("review's run bound %+v", got)
	}
	if got := b.RunBound(config.RoleDev); got != (config.Bound{Tokens: 200_000}) {
		t.Errorf("dev's run bound %+v", got)
	}
	_, err = config.Parse(map[string][]byte{"a.toml": []byte("name = \"a\"\nrepo = \"o/a\"\n[budget]\nday_usd = -1.0\n[budget.roles.edge]\nrun_tokens = 5\n[budget.roles.dev]\nissue_tokens = 5\n")}, config.NewEnv(nil))
	for _, want := range []string{"budget.day_usd", `budget.roles.edge: unknown role "edge"`, "issue_tokens"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad budget: %v, want %q", err, want)
		}
	}
}

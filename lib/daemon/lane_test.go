package daemon

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/redact"
)

// TestClaudeBackendCompaction: a backend's compact_pct reaches its
// sessions; the default backend compacts only when asked.
func TestClaudeBackendCompaction(t *testing.T) {
	file := "name = \"a\"\nrepo = \"o/a\"\n[agents.llama]\nbase_url = \"http://llama:8080\"\nmodel = \"q\"\ncompact_pct = 45\n"
	cfg, err := config.Parse(map[string][]byte{"a.toml": []byte(file)}, config.NewEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if b := claudeBackend(cfg.Backends["llama"]); b.Env[config.AutoCompactEnv] != "45" || b.BaseURL != "http://llama:8080" {
		t.Errorf("llama backend = %+v", b)
	}
	if b := claudeBackend(cfg.Backends["anthropic"]); b.Env != nil {
		t.Errorf("the default backend compacts without being asked: %+v", b.Env)
	}
}

type triggers struct{ got []string }

func (t *triggers) Trigger(project, role string) bool {
	t.got = append(t.got, project+"/"+role)
	return true
}

// TestLaneTriggerWakesLocalDevAgents: a dev event wakes the local dev
// agents of that project, and nothing else does.
func TestLaneTriggerWakesLocalDevAgents(t *testing.T) {
	tr := &triggers{}
	lt := laneTrigger{sched: tr, localDev: map[string][]string{"a": {"dev@llama"}}}
	lt.Trigger("a", "dev")
	lt.Trigger("a", "review")
	lt.Trigger("b", "dev")
	if want := []string{"a/dev", "a/dev@llama", "a/review", "b/dev"}; !slices.Equal(tr.got, want) {
		t.Errorf("triggered %v, want %v", tr.got, want)
	}
}

// TestStatusShowsBackendHealth: an unreachable backend is said plainly.
func TestStatusShowsBackendHealth(t *testing.T) {
	now := time.Now()
	var out bytes.Buffer
	Report{Backends: []claude.Health{
		{Backend: "gone", BaseURL: "http://127.0.0.1:9", Checked: now, Since: now, Error: "connection refused"},
		{Backend: "llama", BaseURL: "http://llama:8080", Reachable: true, Checked: now},
		{Backend: "new", BaseURL: "http://new:1"},
	}}.WriteText(&out, true)
	for _, want := range []string{"backend gone (http://127.0.0.1:9): UNREACHABLE since", "connection refused",
		"backend llama (http://llama:8080): reachable", "backend new (http://new:1): not probed yet"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}

// TestMaintainersOf: the project file's maintainers win, then the
// environment's, then the repository's owner on the real forge.
func TestMaintainersOf(t *testing.T) {
	srv := forgetest.Start(t)
	owner := srv.NewUser(t, "owner")
	repo := srv.NewRepo(t, owner, "proj")
	bot := srv.NewUser(t, "dev-bot")
	deps := func(file []string, env map[string]string) Deps {
		p := &config.Project{Name: "proj", Repo: repo.Slug(), ForgeURL: srv.URL, Maintainers: file}
		return Deps{Config: &config.Config{Env: config.NewEnv(env)}, Project: p, Log: zerolog.Nop(),
			Services: &Services{HTTP: http.DefaultClient, Redactor: redact.New(bot.Token)}}
	}
	b := config.Bot{User: bot.Login, Token: bot.Token}
	for _, tt := range []struct {
		name string
		d    Deps
		want []string
	}{
		{"project file", deps([]string{"alice"}, map[string]string{"FORGE_ADMIN_USER": "admin"}), []string{"alice"}},
		{"environment", deps(nil, map[string]string{"FORGE_ADMIN_USERS": "carol,dave"}), []string{"carol", "dave"}},
		{"repository owner", deps(nil, nil), []string{owner.Login}},
	} {
		if got := tt.d.MaintainersOf(b); !slices.Equal(got, tt.want) {
			t.Errorf("%s: maintainers = %v, want %v", tt.name, got, tt.want)
		}
	}
}

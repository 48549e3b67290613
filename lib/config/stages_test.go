package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
)

// TestProblemsArriveTogether: one load reports every problem of a
// project file, a bad time zone beside a value of the wrong type, and
// every bad line of the env file, not the first of each; each problem
// carries a fix of its own.
func TestProblemsArriveTogether(t *testing.T) {
	dir := t.TempDir()
	project := strings.Join([]string{
		`name = "a"`,
		`repo = "o/a"`,
		`timezone = "Mars/Olympus"`,
		`[roles.dev]`,
		`enabled = "yes"`,
		`[roles.planner]`,
		`schedule = "0 2 * * *"`,
		`[roles.gardener]`,
		`schedule = "0 3 * * *"`,
		``,
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "a.toml"), []byte(project), 0o600); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(dir, ".env")
	if err := os.WriteFile(envFile, []byte("FORGE_TOKEN=x\nnot a var\nPOLL_INTERVAL=5m\n1BAD=y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(dir, envFile, nil)
	var ps config.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("err = %v, want problems", err)
	}
	want := []string{
		envFile + ":2: expected KEY=VALUE",
		envFile + ":4: expected KEY=VALUE",
		"a.toml:3: timezone: \"Mars/Olympus\" is not a known time zone",
		"a.toml:5: roles.dev.enabled: want true or false, got a string",
	}
	got := strings.Split(err.Error(), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(got), len(want), err)
	}
	fixes := map[string]bool{}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("problem %d = %q, want %q", i, got[i], w)
		}
		if ps[i].Fix == "" {
			t.Errorf("problem %q has no fix", got[i])
		}
		fixes[ps[i].Fix] = true
	}
	if len(fixes) != len(want) {
		t.Errorf("fixes are not specific: %d different for %d problems", len(fixes), len(want))
	}
	for i, w := range []string{"line 2", "line 4", "Europe/Berlin", "true or false"} {
		if i < len(ps) && !strings.Contains(ps[i].Fix, w) {
			t.Errorf("fix of %q = %q, want it to say %q", got[i], ps[i].Fix, w)
		}
	}
}

// TestBadTimezoneWithoutSchedules: a bad timezone is a problem even while
// no role has a schedule yet (it would fail the day one is added).
func TestBadTimezoneWithoutSchedules(t *testing.T) {
	_, err := parse(t, nil, map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\ntimezone = \"Mars/Olympus\"\n"})
	if err == nil || !strings.Contains(err.Error(), "a.toml:3: timezone:") {
		t.Fatalf("err = %v, want the timezone's problem", err)
	}
}

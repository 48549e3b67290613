package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
)

// A file with five problems of different kinds lists all five in one
// pass: two values of the wrong type (which stop the decoder), an unknown
// key, a bad duration and an invalid value; the env file's own problem is
// reported beside them.
func TestEveryProblemInOnePass(t *testing.T) {
	dir := t.TempDir()
	src := strings.Join([]string{
		`name = "a"`,                 // 1
		`repo = 42`,                  // 2 wrong type
		`primary_branch = "main"`,    // 3
		`colour = "blue"`,            // 4 unknown key
		`[ci]`,                       // 5
		`woodpecker_repo_id = "one"`, // 6 wrong type
		`[roles.dev]`,                // 7
		`interval = "soon"`,          // 8 bad duration
		`enabled = "yes"`,            // 9 wrong type
		`[limits]`,                   // 10
		`in_flight = -2`,             // 11 invalid value
		``,
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "a.toml"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.toml"), []byte("name = \"b\"\nrepo = [\"o/b\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(dir, ".env")
	if err := os.WriteFile(envFile, []byte("FORGE_TOKEN=x\nnot a var\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(dir, envFile, nil)
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		envFile + ":2: expected KEY=VALUE",
		"a.toml:2: repo: want a string, got an integer",
		"a.toml:4: colour: unknown key",
		"a.toml:6: ci.woodpecker_repo_id: want an integer, got a string",
		"a.toml:8: roles.dev.interval: bad duration \"soon\"",
		"a.toml:9: roles.dev.enabled: want true or false, got a string",
		"a.toml:11: limits.in_flight:",
		"b.toml:2: repo: want a string, got an array",
	}
	got := strings.Split(err.Error(), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(got), len(want), err)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
		}
	}
	for _, l := range got {
		if strings.Contains(l, "destination has type") || strings.Contains(l, "required key is missing") {
			t.Errorf("problem in Go's terms, or said twice: %q", l)
		}
	}
}

func TestTableGivenAValue(t *testing.T) {
	_, err := parse(t, nil, map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\nci = \"none\"\nbogus = 1\n"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"a.toml:3: ci: want a table, got a string", "a.toml:4: bogus: unknown key"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
}

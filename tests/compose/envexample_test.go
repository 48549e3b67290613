package compose_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// envKeyRe matches a setting of .env.example, set or commented out.
var envKeyRe = regexp.MustCompile(`^#?([A-Z][A-Z0-9_]*)=`)

// envExampleKeys lists the settings .env.example documents.
func envExampleKeys(t *testing.T, root string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if m := envKeyRe.FindStringSubmatch(sc.Text()); m != nil && !slices.Contains(keys, m[1]) {
			keys = append(keys, m[1])
		}
	}
	if len(keys) < 20 {
		t.Fatalf(".env.example: found only %d settings: %v", len(keys), keys)
	}
	return keys
}

// composeEnv is, per service of the product file, its environment: each
// variable with its value (nil for a bare name, passed through from .env
// or the shell).
func composeEnv(t *testing.T, root string) (raw string, env map[string]map[string]*string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Services map[string]struct {
			Environment map[string]*string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	env = map[string]map[string]*string{}
	for name, svc := range file.Services {
		env[name] = svc.Environment
	}
	return string(data), env
}

// goReads reports whether a non-test Go file of the module names key as a
// string literal (how the code reads a variable: Getenv, Env.Get, a
// constant, a row of the role table).
func goReads(t *testing.T, root string) func(key string) bool {
	t.Helper()
	var src strings.Builder
	for _, dir := range []string{"cmd", "agents", "lib"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			src.Write(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	all := src.String()
	return func(key string) bool { return strings.Contains(all, `"`+key+`"`) }
}

// TestEnvExampleReachesTheStack: every setting .env.example documents does
// something: compose interpolates it (an image, a port, a value it hands
// on) or passes it to a service as it is. A setting only the code reads
// would stay on the host, in .env, and never reach the containers. And
// every variable passed through as it is is one the code reads.
func TestEnvExampleReachesTheStack(t *testing.T) {
	root := repoRoot(t)
	raw, env := composeEnv(t, root)
	reads := goReads(t, root)
	passed := map[string][]string{} // bare names → services
	for svc, vars := range env {
		for k, v := range vars {
			if v == nil {
				passed[k] = append(passed[k], svc)
			}
		}
	}
	for _, key := range envExampleKeys(t, root) {
		interpolated := strings.Contains(raw, "${"+key+"}") || strings.Contains(raw, "${"+key+":")
		if !interpolated && len(passed[key]) == 0 {
			t.Errorf(".env.example: %s reaches no container: docker-compose.yml neither uses ${%s} nor passes %s to a service", key, key, key)
		}
	}
	for key, svcs := range passed {
		if !reads(key) {
			t.Errorf("docker-compose.yml: %s is passed to %v, but no code reads it", key, svcs)
		}
	}
}

// TestAgentsGetTheirSettings: the settings of the daemon that .env.example
// documents reach the agents service.
func TestAgentsGetTheirSettings(t *testing.T) {
	root := repoRoot(t)
	_, env := composeEnv(t, root)
	for _, key := range []string{"FORGE_ADMIN_USERS", "DISINTO_SYNC_INTERVAL", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
		"DISINTO_LOG_LEVEL", "DISINTO_LOG_FORMAT", "REPRODUCE_INTERVAL", "FORGE_PUBLIC_URL"} {
		v, ok := env["agents"][key]
		if !ok || (v != nil && !strings.Contains(*v, "${"+key)) {
			t.Errorf("docker-compose.yml: the agents service does not get %s from .env", key)
		}
		if !slices.Contains(envExampleKeys(t, root), key) {
			t.Errorf(".env.example does not document %s", key)
		}
	}
}

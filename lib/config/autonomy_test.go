package config_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
)

func TestAutonomyDefaults(t *testing.T) {
	cfg, err := parse(t, nil, map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\n"})
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Projects[0].Autonomy
	if !reflect.DeepEqual(a, config.DefaultAutonomy()) {
		t.Fatalf("autonomy = %+v, want the defaults", a)
	}
	if a.Level != config.AutonomyAuto || a.RoleLevel(config.RoleGardener) != config.AutonomyAuto {
		t.Errorf("level %q, gardener %q: want auto", a.Level, a.RoleLevel(config.RoleGardener))
	}
	for _, f := range []string{".forgejo/workflows/ci.yml", ".gitea/workflows/ci.yaml", ".github/workflows/x.yml",
		".woodpecker.yml", ".woodpecker/build.yaml", "docker/agents/Dockerfile", "docker-compose.yml", "formulas/dev.toml",
		"go.mod", "tools/gitea/go.sum", "web/package-lock.json", "requirements-dev.txt", "Cargo.lock", "Gemfile.lock"} {
		if !a.Protects(f) {
			t.Errorf("%s is not protected by default", f)
		}
	}
	for _, f := range []string{"main.go", "README.md", "docs/formulas/intro.md", "lib/docker/client.go", "agents/dev/poll.go"} {
		if a.Protects(f) {
			t.Errorf("%s is protected by default", f)
		}
	}
}

func TestAutonomyKeys(t *testing.T) {
	file := "name = \"a\"\nrepo = \"o/a\"\n[autonomy]\nlevel = \"approve\"\nprotected_paths = [\"ci/**\", \"/Makefile\"]\n" +
		"extra_protected_paths = [\"scripts/*.sh\", \"ci/**\"]\n[autonomy.roles]\ngardener = \"advisory\"\ndev = \"auto\"\n"
	cfg, err := parse(t, nil, map[string]string{"a.toml": file})
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Projects[0].Autonomy
	if want := []string{"ci/**", "/Makefile", "scripts/*.sh", "ci/**"}; !slices.Equal(a.ProtectedPaths, want) {
		t.Errorf("protected paths %q, want %q", a.ProtectedPaths, want)
	}
	if a.Level != config.AutonomyApprove || a.RoleLevel(config.RoleDev) != config.AutonomyApprove ||
		a.RoleLevel(config.RoleGardener) != config.AutonomyAdvisory {
		t.Errorf("levels: project %q, dev %q, gardener %q", a.Level, a.RoleLevel(config.RoleDev), a.RoleLevel(config.RoleGardener))
	}
	if a.Protects("go.mod") || !a.Protects("Makefile") || a.Protects("sub/Makefile") || !a.Protects("scripts/build.sh") {
		t.Error("protected_paths does not replace the defaults")
	}
	// An empty list protects nothing.
	cfg, err = parse(t, nil, map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\n[autonomy]\nprotected_paths = []\n"})
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Projects[0].Autonomy; a.ProtectedPaths == nil || len(a.ProtectedPaths) != 0 || a.Protects(".github/workflows/ci.yml") {
		t.Errorf("protected_paths = [] gives %q", a.ProtectedPaths)
	}
}

func TestAutonomyProblems(t *testing.T) {
	ok := "name = \"a\"\nrepo = \"o/a\"\n[autonomy]\n"
	for _, tt := range []struct{ name, file, want string }{
		{"bad level", ok + "level = \"yolo\"\n", `a.toml:4: autonomy.level: "yolo" is not one of auto, approve, advisory`},
		{"bad glob", ok + "protected_paths = [\"ci/[\"]\n", `a.toml:4: autonomy.protected_paths: "ci/[": not a glob`},
		{"partial **", ok + "extra_protected_paths = [\"ci**/x\"]\n", `autonomy.extra_protected_paths: "ci**/x": ** must be a whole path segment`},
		{"dot dot", ok + "extra_protected_paths = [\"../x\"]\n", `"../x": paths are relative to the repository's root`},
		{"empty", ok + "extra_protected_paths = [\"\"]\n", `"": empty glob`},
		{"unknown role", ok + "[autonomy.roles]\nplanner = \"approve\"\n", `a.toml:5: autonomy.roles.planner: unknown role "planner" (roles whose pull requests are merged: dev, gardener)`},
		{"bad role level", ok + "[autonomy.roles]\ngardener = \"never\"\n", `autonomy.roles.gardener: "never" is not one of`},
		{"unknown key", ok + "levle = \"auto\"\n", `a.toml:4: autonomy.levle: unknown key`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, nil, map[string]string{"a.toml": tt.file})
			if err == nil || len(strings.Split(err.Error(), "\n")) != 1 || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("problems:\n%v\nwant one containing %q", err, tt.want)
			}
		})
	}
}

func TestAutonomyProtects(t *testing.T) {
	a := config.Autonomy{ProtectedPaths: []string{".github/workflows/**", "docker/**", "go.mod", "requirements*.txt", "/Makefile", "**/ci/*.yml"}}
	for _, tt := range []struct {
		file string
		want bool
	}{
		{".github/workflows/ci.yml", true},
		{".github/workflows/deep/er.yaml", true},
		{".GitHub/Workflows/CI.yml", true},   // matched case-insensitively
		{".github/workflows", true},          // a file or symlink in the directory's place
		{".github", true},                    // leads to .github/workflows
		{".github/CODEOWNERS", false},        // beside it, not on the way
		{".githubx/workflows/ci.yml", false}, // another directory
		{"docker", true},
		{"docker/agents/Dockerfile", true},
		{"src/docker/x", false},
		{"go.mod", true},
		{"tools/gitea/go.mod", true},
		{"go.mod.bak", false},
		{"requirements-dev.txt", true},
		{"py/requirements.txt", true},
		{"Makefile", true},
		{"sub/Makefile", false},
		{"ci/test.yml", true},
		{"a/b/ci/test.yml", true},
		{"ci/test.yaml", false},
		{"main.go", false},
		{"/go.mod", true},
	} {
		if got := a.Protects(tt.file); got != tt.want {
			t.Errorf("Protects(%q) = %v, want %v", tt.file, got, tt.want)
		}
	}
	if got := a.Protected([]string{"main.go", "go.mod", "docker/x"}); !slices.Equal(got, []string{"go.mod", "docker/x"}) {
		t.Errorf("Protected = %q", got)
	}
}

func TestAutonomyLevels(t *testing.T) {
	auto, approve, advisory := config.AutonomyAuto, config.AutonomyApprove, config.AutonomyAdvisory
	for _, tt := range []struct {
		l, ceiling, want config.AutonomyLevel
	}{
		{auto, "", auto}, {auto, approve, approve}, {auto, advisory, advisory},
		{approve, auto, approve}, {approve, advisory, advisory}, {advisory, auto, advisory}, {"", approve, approve},
	} {
		if got := tt.l.Cap(tt.ceiling); got != tt.want {
			t.Errorf("%q.Cap(%q) = %q, want %q", tt.l, tt.ceiling, got, tt.want)
		}
	}
	if !auto.Merges() || !approve.Merges() || advisory.Merges() {
		t.Error("Merges")
	}
	if auto.NeedsMaintainer() || !approve.NeedsMaintainer() || !advisory.NeedsMaintainer() {
		t.Error("NeedsMaintainer")
	}
}

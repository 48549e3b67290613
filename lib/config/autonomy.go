package config

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// AutonomyLevel is how far the factory takes a change without a human:
// the operator's choice per project ([autonomy] level), capped per role.
type AutonomyLevel string

// The autonomy levels, from the most to the least autonomous.
const (
	// AutonomyAuto merges a pull request once CI is green on its head
	// and the review bot approved it.
	AutonomyAuto AutonomyLevel = "auto"
	// AutonomyApprove merges only once, besides, a maintainer approved
	// the head.
	AutonomyApprove AutonomyLevel = "approve"
	// AutonomyAdvisory opens the pull request and never merges it: a
	// maintainer does, or closes it.
	AutonomyAdvisory AutonomyLevel = "advisory"
)

// autonomyLevels lists the levels, the least autonomous first.
var autonomyLevels = []AutonomyLevel{AutonomyAdvisory, AutonomyApprove, AutonomyAuto}

// Validate reports whether l is one of the levels.
func (l AutonomyLevel) Validate() error {
	if !slices.Contains(autonomyLevels, l) {
		return fmt.Errorf("%q is not one of auto, approve, advisory", string(l))
	}
	return nil
}

// rank orders the levels; an empty level is auto, an unknown one the
// least autonomous.
func (l AutonomyLevel) rank() int {
	if l == "" {
		l = AutonomyAuto
	}
	return slices.Index(autonomyLevels, l)
}

// Cap returns the less autonomous of l and ceiling; an empty ceiling caps
// nothing.
func (l AutonomyLevel) Cap(ceiling AutonomyLevel) AutonomyLevel {
	if l == "" {
		l = AutonomyAuto
	}
	if ceiling != "" && ceiling.rank() < l.rank() {
		return ceiling
	}
	return l
}

// Merges reports whether the factory merges at level l at all.
func (l AutonomyLevel) Merges() bool { return l.rank() > AutonomyAdvisory.rank() }

// NeedsMaintainer reports whether a merge at level l waits for a
// maintainer's approval of the head.
func (l AutonomyLevel) NeedsMaintainer() bool { return l.rank() < AutonomyAuto.rank() }

// Autonomy is a project's [autonomy]: the level of the work of its issues,
// the ceilings of the roles whose pull requests the dev bot merges, and
// the paths no change touches without a maintainer.
type Autonomy struct {
	// Level is the level of the dev agent's work on an issue.
	Level AutonomyLevel
	// ProtectedPaths are globs (see Protects): a change touching one is
	// never pushed to a branch, nor merged, before a maintainer approved
	// its head, whatever the level.
	ProtectedPaths []string
	// Roles caps the level of a role's pull requests ([autonomy.roles],
	// e.g. gardener = "approve"); a role not listed has Level.
	Roles map[Role]AutonomyLevel
}

// DefaultAutonomy is the autonomy of a project whose file says nothing:
// level auto and the default protected paths.
func DefaultAutonomy() Autonomy {
	return Autonomy{Level: AutonomyAuto, ProtectedPaths: DefaultProtectedPaths()}
}

// RoleLevel is the level of role r's pull requests: Level capped by the
// role's ceiling.
func (a Autonomy) RoleLevel(r Role) AutonomyLevel { return a.Level.Cap(a.Roles[r]) }

// DefaultProtectedPaths are the paths protected unless the project file
// says otherwise: the files of every CI the factory works with (and of
// the common others), the images and the compose stack, the factory's
// formulas, submodules, and dependency manifests and lock files at any
// depth. What CI runs, what images are built from and what code is
// fetched from elsewhere decide what runs with the repository's secrets.
func DefaultProtectedPaths() []string {
	return []string{
		// CI and workflows.
		".forgejo/**", ".gitea/**", ".github/**", ".woodpecker/**", ".woodpecker.yml", ".woodpecker.yaml",
		".ci/**", ".circleci/**", ".buildkite/**", ".drone.yml", ".gitlab-ci.yml", ".travis.yml",
		"Jenkinsfile", "azure-pipelines.yml", "bitbucket-pipelines.yml",
		// Images and the compose stack.
		"docker/**", "Dockerfile", "Dockerfile.*", "*.dockerfile", "Containerfile", ".dockerignore",
		"docker-compose*.yml", "docker-compose*.yaml", "compose.yml", "compose.yaml", "compose.*.yml", "compose.*.yaml",
		// The factory's prompts.
		"formulas/**",
		// Code from elsewhere: submodules, dependency manifests, lock files.
		".gitmodules",
		"go.mod", "go.sum", "go.work", "go.work.sum",
		"package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "pnpm-workspace.yaml",
		"bun.lock", "bun.lockb", ".npmrc", ".yarnrc", ".yarnrc.yml",
		"Cargo.toml", "Cargo.lock",
		"requirements*.txt", "constraints*.txt", "Pipfile", "Pipfile.lock", "poetry.lock", "pyproject.toml",
		"setup.py", "setup.cfg", "uv.lock",
		"Gemfile", "Gemfile.lock", "*.gemspec", "composer.json", "composer.lock",
		"pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts", "gradle.lockfile",
		"gradle-wrapper.properties", "mix.exs", "mix.lock", "Package.swift", "Package.resolved", "Podfile", "Podfile.lock",
		"flake.nix", "flake.lock", "deno.json", "deno.lock", "packages.lock.json", "Directory.Packages.props",
	}
}

// Protects reports whether a change to file (a path relative to the
// repository's root, as a diff names it) touches a protected path.
//
// The globs are matched case-insensitively, one path segment at a time:
// "*", "?" and "[...]" within a segment as path.Match reads them, "**"
// (a whole segment) for any number of segments. A glob with a slash is
// anchored at the root ("docker/**"), one without matches at any depth
// ("go.mod" is also "tools/go.mod"). "dir/**" protects dir itself (a
// symlink or submodule in its place), and every glob protects the
// directories that lead to its literal part: a change to ".github" (a
// file or a symlink where the directory was) touches
// ".github/workflows/**".
func (a Autonomy) Protects(file string) bool {
	segs := strings.Split(strings.ToLower(strings.Trim(file, "/")), "/")
	for _, g := range a.ProtectedPaths {
		gs := globSegments(g)
		if matchSegments(gs, segs) || leadsTo(gs, segs) {
			return true
		}
	}
	return false
}

// Protected returns the files of files that touch a protected path, in
// order.
func (a Autonomy) Protected(files []string) []string {
	var out []string
	for _, f := range files {
		if a.Protects(f) {
			out = append(out, f)
		}
	}
	return out
}

// globSegments splits glob into lower-case segments, with "**" in front
// of a glob that has no slash (it matches at any depth).
func globSegments(glob string) []string {
	g := strings.ToLower(glob)
	if !strings.Contains(strings.Trim(g, "/"), "/") && !strings.HasPrefix(g, "/") {
		return []string{"**", g}
	}
	return strings.Split(strings.Trim(g, "/"), "/")
}

// matchSegments reports whether the path segments s match the glob
// segments g.
func matchSegments(g, s []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for i := 0; i <= len(s); i++ {
				if matchSegments(g[1:], s[i:]) {
					return true
				}
			}
			return false
		}
		if len(s) == 0 {
			return false
		}
		if ok, err := path.Match(g[0], s[0]); err != nil || !ok {
			return false
		}
		g, s = g[1:], s[1:]
	}
	return len(s) == 0
}

// leadsTo reports whether the path s is a directory on the way to the
// literal beginning of the glob g (its segments up to the first with a
// wildcard): what is at s decides what is at g.
func leadsTo(g, s []string) bool {
	lit := 0
	for lit < len(g) && !strings.ContainsAny(g[lit], `*?[\`) {
		lit++
	}
	return len(s) < lit && slices.Equal(g[:len(s)], s)
}

// rawAutonomy mirrors [autonomy].
type rawAutonomy struct {
	Level               string            `toml:"level"`
	ProtectedPaths      *[]string         `toml:"protected_paths"`
	ExtraProtectedPaths []string          `toml:"extra_protected_paths"`
	Roles               map[string]string `toml:"roles"`
}

// validate reads r over the defaults; bad reports each problem by key.
func (r rawAutonomy) validate(bad func(key, format string, args ...any)) Autonomy {
	a := DefaultAutonomy()
	if r.Level != "" {
		if err := AutonomyLevel(r.Level).Validate(); err != nil {
			bad("autonomy.level", "%s", err)
		} else {
			a.Level = AutonomyLevel(r.Level)
		}
	}
	if r.ProtectedPaths != nil {
		a.ProtectedPaths = validGlobs("autonomy.protected_paths", *r.ProtectedPaths, bad)
	}
	a.ProtectedPaths = append(a.ProtectedPaths, validGlobs("autonomy.extra_protected_paths", r.ExtraProtectedPaths, bad)...)
	for name, lvl := range r.Roles {
		key := "autonomy.roles." + name
		if !slices.Contains(cappedRoles(), Role(name)) {
			bad(key, "unknown role %q (roles whose pull requests are merged: %s)", name, joinRoles(cappedRoles()))
			continue
		}
		if err := AutonomyLevel(lvl).Validate(); err != nil {
			bad(key, "%s", err)
			continue
		}
		if a.Roles == nil {
			a.Roles = map[Role]AutonomyLevel{}
		}
		a.Roles[Role(name)] = AutonomyLevel(lvl)
	}
	return a
}

// cappedRoles are the roles whose pull requests the dev bot merges: its
// own and the chore roles'.
func cappedRoles() []Role {
	return rolesWhere(func(s RoleSpec) bool { return s.Name == RoleDev || s.ChorePrefix != "" })
}

// validGlobs checks the globs of key; the valid ones are returned, each
// once, in order (an empty list stays empty, not nil).
func validGlobs(key string, globs []string, bad func(key, format string, args ...any)) []string {
	out := []string{}
	for _, g := range globs {
		if msg := globProblem(g); msg != "" {
			bad(key, "%q: %s", g, msg)
			continue
		}
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// globProblem says what is wrong with glob, "" when nothing is.
func globProblem(glob string) string {
	trimmed := strings.TrimPrefix(glob, "/")
	if strings.TrimSpace(trimmed) == "" {
		return "empty glob"
	}
	for _, s := range strings.Split(strings.TrimSuffix(trimmed, "/"), "/") {
		switch {
		case s == "":
			return "empty path segment"
		case s == "." || s == "..":
			return "paths are relative to the repository's root, without . or .."
		case s != "**" && strings.Contains(s, "**"):
			return "** must be a whole path segment (dir/**, **/name)"
		}
		if _, err := path.Match(s, ""); err != nil {
			return "not a glob: " + err.Error()
		}
	}
	return ""
}

package graph

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// Files reads one repository's files at one revision.
//
// Read returns an error wrapping fs.ErrNotExist when there is no file at
// the path. List returns the paths (relative to the repository's root) of
// the files directly in dir, not in its subdirectories; none when dir
// does not exist.
type Files interface {
	Read(path string) ([]byte, error)
	List(dir string) ([]string, error)
}

// Mapping maps changed files to the nodes they stand for.
type Mapping struct {
	// Files are patterns relative to the repository's root: a path, a
	// path.Match pattern, or a directory prefix ending in "/**".
	Files []string `toml:"files"`
	// Nodes are node ids ("prereq:site-live", "infrastructure:ci").
	Nodes []string `toml:"nodes"`
}

// DefaultMappings are the mappings every project has: its formulas,
// agents and evidence by convention, and the infrastructure files.
var DefaultMappings = []Mapping{
	{Files: []string{"docker-compose.yml", "docker-compose.*.yml", "compose.yml", "compose.*.yml"}, Nodes: []string{"infrastructure:compose"}},
	{Files: []string{"docker/**", "Dockerfile", "Dockerfile.*", "*/Dockerfile", "*/Dockerfile.*", ".dockerignore"}, Nodes: []string{"infrastructure:docker"}},
	{Files: []string{".woodpecker/**", ".woodpecker.yml", ".forgejo/workflows/**", ".gitea/workflows/**", ".github/workflows/**", ".ci/**"}, Nodes: []string{"infrastructure:ci"}},
	{Files: []string{"Makefile", "go.mod", "go.sum", "package.json", "package-lock.json"}, Nodes: []string{"infrastructure:build"}},
}

// mapFile is the TOML shape of the mapping file.
type mapFile struct {
	Map []Mapping `toml:"map"`
}

// ErrMapping is wrapped by the errors of a malformed mapping file.
var ErrMapping = errors.New("graph: bad file mapping")

// ParseMappings reads a mapping file:
//
//	[[map]]
//	files = ["docker-compose.yml", "docker/**"]
//	nodes = ["prereq:site-live"]
//
// name is the file's name for errors. Unknown keys, empty lists and
// malformed patterns are errors.
func ParseMappings(name string, data []byte) ([]Mapping, error) {
	var mf mapFile
	md, err := toml.Decode(string(data), &mf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", name, ErrMapping, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("%s: %w: unknown key %s", name, ErrMapping, und[0])
	}
	for i, m := range mf.Map {
		if len(m.Files) == 0 || len(m.Nodes) == 0 {
			return nil, fmt.Errorf("%s: map[%d]: %w: files and nodes must both be given", name, i, ErrMapping)
		}
		for _, p := range m.Files {
			if _, err := path.Match(strings.TrimSuffix(p, "/**"), ""); err != nil || p == "" {
				return nil, fmt.Errorf("%s: map[%d]: %w: pattern %q", name, i, ErrMapping, p)
			}
		}
		for _, n := range m.Nodes {
			if !strings.Contains(n, ":") {
				return nil, fmt.Errorf("%s: map[%d]: %w: node %q is not a node id (type:name)", name, i, ErrMapping, n)
			}
		}
	}
	return mf.Map, nil
}

// matches reports whether file matches pattern.
func matches(pattern, file string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/**"); ok {
		return strings.HasPrefix(file, dir+"/")
	}
	ok, err := path.Match(pattern, file)
	return err == nil && ok
}

// Mapper turns repository paths into node ids.
type Mapper struct {
	maps   []Mapping
	agents []string
}

// NewMapper maps files with maps (after the defaults) and the
// conventions for formulas, agents (agents/<name>/… and <name>/…) and
// evidence.
func NewMapper(agents []string, maps []Mapping) *Mapper {
	return &Mapper{maps: append(slices.Clone(DefaultMappings), maps...), agents: agents}
}

// Nodes returns the node ids file stands for, sorted; file:<path> is
// always among them.
func (m *Mapper) Nodes(file string) []string {
	file = strings.TrimPrefix(path.Clean(strings.TrimPrefix(file, "./")), "/")
	out := []string{"file:" + file}
	for _, mp := range m.maps {
		for _, p := range mp.Files {
			if matches(p, file) {
				out = append(out, mp.Nodes...)
				break
			}
		}
	}
	if name, ok := strings.CutPrefix(file, "formulas/"); ok && path.Ext(name) == ".toml" && !strings.Contains(name, "/") {
		out = append(out, "formula:"+strings.TrimSuffix(name, ".toml"))
	}
	if rest, ok := strings.CutPrefix(file, "evidence/"); ok && path.Ext(rest) == ".json" {
		out = append(out, "evidence:"+strings.TrimSuffix(rest, ".json"))
	}
	for _, a := range m.agents {
		if file == "agents/"+a || file == a || strings.HasPrefix(file, "agents/"+a+"/") || strings.HasPrefix(file, a+"/") {
			out = append(out, "agent:"+a)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// pathRE finds a repository path in backticks: `docker-compose.yml`,
// `formulas/run-planner.toml`, `agents/dev/`.
var pathRE = regexp.MustCompile("`(\\.?[A-Za-z0-9_][A-Za-z0-9_.\\-]*(?:/[A-Za-z0-9_.\\-]+)*/?)`")

// mentionedPaths returns the paths text names in backticks that look
// like files (a slash or an extension), without repeats.
func mentionedPaths(text string) []string {
	var out []string
	for _, m := range pathRE.FindAllStringSubmatch(text, 64) {
		p := strings.TrimSuffix(m[1], "/")
		if !strings.Contains(p, "/") && path.Ext(p) == "" && p != "Makefile" && p != "Dockerfile" {
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// isNotExist reports whether err says a file is missing.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

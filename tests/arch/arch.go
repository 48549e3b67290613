// Package arch checks the import layering of the module: cmd → agents →
// lib, never backwards, agents never importing each other, and test
// harnesses and the packages under tests imported only from tests.
package arch

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Violation is one import that breaks a rule.
type Violation struct {
	File   string // relative to the root
	Import string
	Rule   string
}

func (v Violation) String() string { return fmt.Sprintf("%s imports %s: %s", v.File, v.Import, v.Rule) }

// leafLibs are the bottom of the lib graph: they import no lib package
// but the leaves themselves.
var leafLibs = map[string]bool{"lib/config": true, "lib/phase": true, "lib/redact": true, "lib/atomicfile": true, "lib/tomlpos": true, "lib/text": true, "lib/shard": true,
	"lib/datadir": true}

// harnesses stand in for real parts in tests; production code never
// imports them.
var harnesses = []string{"lib/forge/forgetest", "lib/forge/forgefake", "lib/claude/claudetest", "lib/sandbox/sandboxtest",
	"lib/formulaagent/formulaagenttest", "lib/edge/edgetest", "lib/runner/runnertest"}

// Check walks root (a module whose path is module) and returns every
// layering violation, sorted.
func Check(root, module string) ([]Violation, error) {
	var out []Violation
	fset := token.NewFileSet()
	err := walkGo(root, func(path, rel string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		from := filepath.ToSlash(filepath.Dir(rel))
		isTest := strings.HasSuffix(path, "_test.go")
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p != module && !strings.HasPrefix(p, module+"/") {
				continue
			}
			to := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
			if rule := broken(from, to, isTest); rule != "" {
				out = append(out, Violation{File: rel, Import: to, Rule: rule})
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, err
}

// walkGo calls fn with the path and the slash-separated path relative to
// root of every Go file of the module at root: testdata, vendor, hidden
// directories and separate modules (tools/*, with rules of their own)
// are left out.
func walkGo(root string, fn func(path, rel string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		return fn(path, rel)
	})
}

// broken returns the rule an import from package dir from to package dir
// to breaks, or "".
func broken(from, to string, isTest bool) string {
	top := func(p string) string { s, _, _ := strings.Cut(p, "/"); return s }
	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	agentOf := func(p string) string {
		parts := strings.Split(p, "/")
		if len(parts) >= 2 && parts[0] == "agents" {
			return parts[1]
		}
		return ""
	}
	inTests := top(from) == "tests"
	// A harness may build on another (formulaagenttest on forgetest).
	inHarness := false
	for _, h := range harnesses {
		inHarness = inHarness || under(from, h)
	}
	for _, h := range harnesses {
		if under(to, h) && !isTest && !inTests && !inHarness && !strings.HasPrefix(from, filepath.Dir(h)+"/") {
			return "test harnesses are imported only from tests"
		}
	}
	// What tests share (tests/internal/rig: the binary, its daemon and
	// the scene it works on) is no part of the product.
	if top(to) == "tests" && !inTests {
		return "only tests import tests"
	}
	// The daemon's runtime knows roles only by their constructors.
	if under(from, "lib/daemon") && top(to) == "agents" {
		return "lib/daemon imports no agent: roles reach it through their constructors (daemon.Registry)"
	}
	switch top(from) {
	case "lib":
		if top(to) != "lib" {
			return "lib imports only lib"
		}
		for leaf := range leafLibs {
			if under(from, leaf) && !under(to, leaf) && !leafLibs[to] {
				return leaf + " imports no other lib package"
			}
		}
	case "agents":
		switch top(to) {
		case "cmd":
			return "agents never import cmd"
		case "agents":
			if agentOf(from) != agentOf(to) {
				return "agents never import each other; move shared code to lib"
			}
		}
	case "formulas":
		if to != "" {
			return "formulas holds only the embedded templates"
		}
	}
	if top(to) == "cmd" && top(from) != "cmd" && !inTests {
		return "nothing imports cmd"
	}
	return ""
}

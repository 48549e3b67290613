package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// envName is a string literal that names an environment variable of the
// factory, by the prefixes its variables use.
var envName = regexp.MustCompile(`^(DISINTO|FORGE|CLAUDE|ANTHROPIC|CHAT|WOODPECKER|MIRROR|AGENT|PROJECT|OPS)_[A-Z0-9_]*[A-Z0-9]$|^[A-Z]+_INTERVAL$`)

// EnvLiterals are the string literals of the product code under root (the
// non-test files of cmd, agents and lib, test harness packages left out)
// that name an environment variable, each with a file that holds it.
func EnvLiterals(root string) (map[string]string, error) {
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, top := range []string{"cmd", "agents", "lib"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" || strings.HasSuffix(d.Name(), "test") && path != filepath.Join(root, top) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(lit.Value); err == nil && envName.MatchString(s) {
					if _, seen := out[s]; !seen {
						out[s] = rel
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"sort"
	"strings"
)

// layoutPkg is the one package that names paths under the data dir.
const layoutPkg = "lib/datadir"

// PathViolation is a path under the data dir spelled outside layoutPkg.
type PathViolation struct {
	File string // relative to the root
	Line int
	Expr string // the call, as written
}

func (v PathViolation) String() string {
	return fmt.Sprintf("%s:%d: %s: paths under the data dir are named in %s", v.File, v.Line, v.Expr, layoutPkg)
}

// DataDirJoins walks root and returns every call of filepath.Join or
// path.Join outside layoutPkg whose first argument mentions the data dir:
// an identifier or field named dataDir, DataDir or datadir, wherever it
// sits in that argument (s.dataDir, o.DataDir, append([]string{dataDir},
// ...)). Tests are left out: they build data dirs of older layouts on
// purpose.
func DataDirJoins(root string) ([]PathViolation, error) {
	var out []PathViolation
	fset := token.NewFileSet()
	err := walkGo(root, func(path, rel string) error {
		if strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, layoutPkg+"/") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 || !isJoin(call.Fun) || !mentionsDataDir(call.Args[0]) {
				return true
			}
			out = append(out, PathViolation{File: rel, Line: fset.Position(call.Pos()).Line, Expr: exprString(fset, call)})
			return true
		})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, err
}

// isJoin reports whether fun is filepath.Join or path.Join.
func isJoin(fun ast.Expr) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Join" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && (pkg.Name == "filepath" || pkg.Name == "path")
}

// mentionsDataDir reports whether an identifier named like the data dir
// appears anywhere in e.
func mentionsDataDir(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && strings.EqualFold(id.Name, "datadir") {
			found = true
		}
		return !found
	})
	return found
}

// exprString is the source of call, on one line and cut short.
func exprString(fset *token.FileSet, call *ast.CallExpr) string {
	var b strings.Builder
	_ = printer.Fprint(&b, fset, call)
	s := strings.Join(strings.Fields(b.String()), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"sort"
	"strings"
)

// markerReaders are the functions that read markers out of any text,
// whoever wrote it, each with the package that defines it and where the
// author-checked reading of a comment, issue or pull request lives.
var markerReaders = map[string]struct{ pkg, use string }{
	"forge.FindMarker":     {"lib/forge", "MarkerBy of the comment, issue or pull request"},
	"forge.FindRefMarkers": {"lib/forge", "RefMarkersBy of the comment or pull request"},
	"verdict.ParseMarker":  {"lib/verdict", "verdict.CommentMarker"},
}

// MarkerViolation is a marker read out of a forge item's body without
// checking who wrote it.
type MarkerViolation struct {
	File string // relative to the root
	Line int
	Expr string // the call, as written
	Use  string // what to call instead
}

func (v MarkerViolation) String() string {
	return fmt.Sprintf("%s:%d: %s: a marker counts only when the factory's bot wrote it; use %s", v.File, v.Line, v.Expr, v.Use)
}

// UncheckedMarkerReads walks root and returns every call of a marker
// reader, outside the package that defines it, whose text is the Body of
// something (a comment, issue, pull request or review): anyone can write
// a marker into a body, so it is read through the item's MarkerBy, which
// checks the author. Tests are left out: they plant markers on purpose.
func UncheckedMarkerReads(root string) ([]MarkerViolation, error) {
	var out []MarkerViolation
	fset := token.NewFileSet()
	err := walkGo(root, func(path, rel string) error {
		if strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", rel, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 || !isBody(call.Args[0]) {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			r, ok := markerReaders[pkg.Name+"."+sel.Sel.Name]
			if !ok || strings.HasPrefix(rel, r.pkg+"/") {
				return true
			}
			out = append(out, MarkerViolation{File: rel, Line: fset.Position(call.Pos()).Line, Expr: exprString(fset, call), Use: r.use})
			return true
		})
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, err
}

// isBody reports whether e is a field named Body (c.Body, p.pr.Body).
func isBody(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Body"
}

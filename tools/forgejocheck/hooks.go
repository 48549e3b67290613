package forgejocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
)

// DeliveryHeaders returns the header names Forgejo sets on every webhook
// delivery (services/webhook/shared/payloader.go): calls of Header.Add or
// Header.Set with a literal name, and assignments to Header["…"].
func DeliveryHeaders(src string) ([]string, error) {
	path := filepath.Join(src, "services", "webhook", "shared", "payloader.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if ok && (sel.Sel.Name == "Add" || sel.Sel.Name == "Set") && isHeader(sel.X) && len(x.Args) == 2 {
				if s := stringLit(x.Args[0]); s != "" {
					out = append(out, s)
				}
			}
		case *ast.IndexExpr:
			if isHeader(x.X) {
				if s := stringLit(x.Index); s != "" {
					out = append(out, s)
				}
			}
		}
		return true
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no delivery header found", path)
	}
	return dedupe(out), nil
}

func isHeader(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Header"
}

// HookEventTypes returns the webhook event types Forgejo knows
// (modules/webhook/type.go, the HookEventType constants): the names a
// webhook subscribes to and the X-Forgejo-Event-Type values.
func HookEventTypes(src string) (map[string]bool, error) {
	path := filepath.Join(src, "modules", "webhook", "type.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "HookEventType" {
				continue
			}
			for _, v := range vs.Values {
				if s := stringLit(v); s != "" {
					out[s] = true
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no HookEventType constant", path)
	}
	return out, nil
}

// Structs are the struct types of one Go package, by name, read with
// go/ast: Forgejo's API structs (modules/structs) or a product file.
type Structs map[string]*ast.StructType

// LoadStructs parses the struct types of the .go files of dir (tests
// excluded), or of one file.
func LoadStructs(path string) (Structs, error) {
	var files []string
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if st.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	} else {
		files = []string{path}
	}
	out := Structs{}
	fset := token.NewFileSet()
	for _, p := range files {
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					out[ts.Name.Name] = st
				}
			}
			return true
		})
	}
	return out, nil
}

// fieldType finds the struct a field of type e holds (through pointers
// and slices), named in s or written inline.
func (s Structs) fieldType(e ast.Expr) *ast.StructType {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ArrayType:
			e = x.Elt
		case *ast.Ident:
			return s[x.Name]
		case *ast.StructType:
			return x
		default:
			return nil
		}
	}
}

// field returns the type of st's field with JSON name name, looking into
// embedded structs as encoding/json does.
func (s Structs) field(st *ast.StructType, name string) (ast.Expr, bool) {
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			tag, _ = strconv.Unquote(f.Tag.Value)
		}
		jn, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
		if jn == "-" {
			continue
		}
		if len(f.Names) == 0 && jn == "" {
			if inner := s.fieldType(f.Type); inner != nil {
				if t, ok := s.field(inner, name); ok {
					return t, true
				}
			}
			continue
		}
		for _, n := range f.Names {
			if jn == name || jn == "" && n.Name == name {
				return f.Type, true
			}
		}
	}
	return nil, false
}

// Lacks returns the first part of the JSON field path that type typ
// lacks, "" when it has the whole path.
func (s Structs) Lacks(typ string, path []string) string {
	st := s[typ]
	for i, name := range path {
		if st == nil {
			return strings.Join(path[:i], ".")
		}
		t, ok := s.field(st, name)
		if !ok {
			return strings.Join(path[:i+1], ".")
		}
		st = s.fieldType(t)
	}
	return ""
}

// JSONPaths lists the JSON field paths of struct typ (leaves only).
func (s Structs) JSONPaths(typ string) [][]string {
	var walk func(st *ast.StructType, prefix []string, depth int) [][]string
	walk = func(st *ast.StructType, prefix []string, depth int) [][]string {
		var out [][]string
		for _, f := range st.Fields.List {
			tag := ""
			if f.Tag != nil {
				tag, _ = strconv.Unquote(f.Tag.Value)
			}
			jn, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
			for _, n := range f.Names {
				name := jn
				if name == "" {
					name = n.Name
				}
				if name == "-" {
					continue
				}
				p := append(append([]string(nil), prefix...), name)
				if inner := s.fieldType(f.Type); inner != nil && depth < 6 {
					out = append(out, walk(inner, p, depth+1)...)
				} else {
					out = append(out, p)
				}
			}
		}
		return out
	}
	if s[typ] == nil {
		return nil
	}
	return walk(s[typ], nil, 0)
}

package forgejocheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
)

// SDKPath is the import path of the Gitea SDK the forge client wraps.
const SDKPath = "code.gitea.io/sdk/gitea"

// Decode is one response field the client reads: either a field of an SDK
// type (Type is the SDK type's name, which names its definition in the API
// description) or a field of a JSON answer the client decodes itself
// (Method and Route say which answer). Path is the JSON field path.
type Decode struct {
	Type          string
	Method, Route string
	Path          []string
	Pos           string
}

// Decodes type-checks a Go package (the forge client) and returns the
// response fields it reads: every field of an SDK struct it selects, and
// every field of the types its raw requests (Client.do) decode into. dir
// is the module root to run `go list` in.
func Decodes(dir, pkg string) ([]Decode, error) {
	fset := token.NewFileSet()
	files, info, err := typeCheck(fset, dir, pkg)
	if err != nil {
		return nil, err
	}
	a := &analysis{fset: fset, info: info}
	for _, f := range files {
		ast.Inspect(f, a.visit)
	}
	return a.out, a.err
}

type analysis struct {
	fset *token.FileSet
	info *types.Info
	out  []Decode
	err  error
}

func (a *analysis) pos(n ast.Node) string {
	p := a.fset.Position(n.Pos())
	return fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
}

func (a *analysis) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.SelectorExpr:
		a.selection(n)
	case *ast.CallExpr:
		a.rawCall(n)
	}
	return true
}

// selection records a read (or write) of a field of an SDK struct.
func (a *analysis) selection(n *ast.SelectorExpr) {
	sel := a.info.Selections[n]
	if sel == nil || sel.Kind() != types.FieldVal {
		return
	}
	named, st := sdkStruct(sel.Recv())
	if named == nil {
		return
	}
	var path []string
	for i, idx := range sel.Index() {
		f := st.Field(idx)
		name := jsonName(st.Tag(idx), f)
		if name == "-" {
			return
		}
		if !f.Embedded() || name != "" {
			path = append(path, name)
		}
		if i < len(sel.Index())-1 {
			if _, st = sdkStruct(f.Type()); st == nil {
				return
			}
		}
	}
	if len(path) > 0 {
		a.out = append(a.out, Decode{Type: named.Obj().Name(), Path: path, Pos: a.pos(n)})
	}
}

// rawCall records the fields decoded by a call of the client's raw
// request method do(ctx, method, path, query, in, out).
func (a *analysis) rawCall(n *ast.CallExpr) {
	fn, ok := n.Fun.(*ast.SelectorExpr)
	if !ok || fn.Sel.Name != "do" || len(n.Args) != 6 {
		return
	}
	sel := a.info.Selections[fn]
	if sel == nil || sel.Kind() != types.MethodVal {
		return
	}
	out := a.info.Types[n.Args[5]].Type
	if out == nil || types.Identical(out, types.Typ[types.UntypedNil]) {
		return
	}
	if p, ok := out.Underlying().(*types.Pointer); ok {
		out = p.Elem()
	}
	if s, ok := out.Underlying().(*types.Slice); ok && types.Identical(s.Elem(), types.Typ[types.Byte]) {
		return // raw text, not JSON
	}
	method := a.info.Types[n.Args[1]].Value
	route, ok := a.route(n.Args[2])
	if method == nil || method.Kind() != constant.String || !ok {
		a.err = fmt.Errorf("%s: a raw request decoding JSON must have a constant method and a path of literals, r.path, fmt.Sprintf and escapes", a.pos(n))
		return
	}
	for _, p := range jsonPaths(out, nil, 0) {
		a.out = append(a.out, Decode{Method: constant.StringVal(method), Route: route, Path: p, Pos: a.pos(n)})
	}
}

var verb = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)

// route evaluates a path expression to a template, "{}" standing for
// each value only known at run time.
func (a *analysis) route(e ast.Expr) (string, bool) {
	if tv := a.info.Types[e]; tv.Value != nil && tv.Value.Kind() == constant.String {
		return constant.StringVal(tv.Value), true
	}
	switch e := e.(type) {
	case *ast.ParenExpr:
		return a.route(e.X)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		l, ok1 := a.route(e.X)
		r, ok2 := a.route(e.Y)
		return l + r, ok1 && ok2
	case *ast.CallExpr:
		fn, ok := e.Fun.(*ast.SelectorExpr)
		if !ok {
			return "{}", true
		}
		format := func() (string, bool) {
			if len(e.Args) == 0 {
				return "", false
			}
			tv := a.info.Types[e.Args[0]]
			if tv.Value == nil || tv.Value.Kind() != constant.String {
				return "", false
			}
			return verb.ReplaceAllString(constant.StringVal(tv.Value), "{}"), true
		}
		switch {
		case fn.Sel.Name == "path" && a.info.Selections[fn] != nil:
			// RepoClient.path: "/repos/" + owner/name + format.
			s, ok := format()
			return "/repos/{}/{}" + s, ok
		case fn.Sel.Name == "Sprintf":
			return format()
		}
		// An escape or conversion of a run-time value: one segment.
		return "{}", true
	}
	return "", false
}

// sdkStruct returns the SDK named struct type t is or points to.
func sdkStruct(t types.Type) (*types.Named, *types.Struct) {
	for {
		p, ok := t.(*types.Pointer)
		if !ok {
			break
		}
		t = p.Elem()
	}
	named, ok := t.(*types.Named)
	if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != SDKPath {
		return nil, nil
	}
	st, ok := named.Underlying().(*types.Struct)
	if !ok {
		return nil, nil
	}
	return named, st
}

// jsonName is a field's JSON name: its json tag's name, else (as
// encoding/json does) its Go name; "" for an embedded struct without tag.
func jsonName(tag string, f *types.Var) string {
	name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
	if name != "" {
		return name
	}
	if f.Embedded() {
		return ""
	}
	return f.Name()
}

// jsonPaths lists the JSON field paths a value of type t decodes.
func jsonPaths(t types.Type, prefix []string, depth int) [][]string {
	if depth > 6 {
		return nil
	}
	switch u := t.Underlying().(type) {
	case *types.Pointer:
		return jsonPaths(u.Elem(), prefix, depth+1)
	case *types.Slice:
		return jsonPaths(u.Elem(), prefix, depth+1)
	case *types.Struct:
		var out [][]string
		for i := range u.NumFields() {
			f := u.Field(i)
			if !f.Exported() {
				continue
			}
			name := jsonName(u.Tag(i), f)
			switch name {
			case "-":
				continue
			case "":
				out = append(out, jsonPaths(f.Type(), prefix, depth+1)...)
				continue
			}
			p := append(append([]string(nil), prefix...), name)
			if sub := jsonPaths(f.Type(), p, depth+1); len(sub) > 0 {
				out = append(out, sub...)
			} else {
				out = append(out, p)
			}
		}
		return out
	}
	return nil
}

// typeCheck parses pkg's non-test files and type-checks them against the
// export data `go list -export` builds for its dependencies.
func typeCheck(fset *token.FileSet, dir, pkg string) ([]*ast.File, *types.Info, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export,Dir,GoFiles", pkg)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list %s: %w: %s", pkg, err, strings.TrimSpace(stderr.String()))
	}
	exports := map[string]string{}
	var target struct {
		Dir     string
		GoFiles []string
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Export, Dir string
			GoFiles                 []string
		}
		if err := dec.Decode(&p); err != nil {
			return nil, nil, err
		}
		exports[p.ImportPath] = p.Export
		if p.ImportPath == pkg {
			target.Dir, target.GoFiles = p.Dir, p.GoFiles
		}
	}
	var files []*ast.File
	for _, name := range target.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(target.Dir, name), nil, 0)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(pkg, fset, files, info); err != nil {
		return nil, nil, fmt.Errorf("type-check %s: %w", pkg, err)
	}
	return files, info, nil
}

// CheckDecodes reports the fields the client reads that Forgejo's answers
// lack. SDK types are matched to the definition of the same name, or the
// one aliases names; an SDK type with neither is reported, so a new one
// is looked at once.
func (s *Spec) CheckDecodes(ds []Decode, aliases map[string]string) []Finding {
	var out []Finding
	noRoute := map[string]bool{}
	for _, d := range ds {
		if d.Type == "" {
			_, op, f := s.Operation(d.Method, d.Route)
			if f != nil {
				// One finding per route, not one per field read.
				if !noRoute[f.Key] {
					noRoute[f.Key] = true
					out = append(out, Finding{f.Key, f.Detail + " (read at " + d.Pos + ")"})
				}
				continue
			}
			sc, _ := s.ResponseSchema(op)
			if missing := s.Lacks(sc, d.Path); missing != "" {
				tmpl, _ := s.Match(d.Route)
				out = append(out, Finding{"field " + d.Method + " " + tmpl + " " + missing, "Forgejo's answer has no field " + missing + " (read at " + d.Pos + ")"})
			}
			continue
		}
		def := d.Type
		if a, ok := aliases[def]; ok {
			def = a
		}
		if def == "" {
			continue // an SDK type that is no API object (options of a query)
		}
		sc := s.Definitions[def]
		if sc == nil {
			out = append(out, Finding{"type " + d.Type, "Forgejo's API has no definition " + def + " for the SDK's " + d.Type + " (read at " + d.Pos + "): name the definition in sdkAliases"})
			continue
		}
		if missing := s.Lacks(sc, d.Path); missing != "" {
			out = append(out, Finding{"field " + def + "." + missing, "Forgejo's " + def + " has no field " + missing + " (the SDK's " + d.Type + " read at " + d.Pos + ")"})
		}
	}
	return out
}

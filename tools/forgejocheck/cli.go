package forgejocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Commands maps a `forgejo` subcommand path ("admin user create") to its
// flags, each name (aliases too) to its kind ("BoolFlag", "StringFlag", …).
type Commands map[string]map[string]string

// cliNode is one cli.Command literal of Forgejo's cmd package.
type cliNode struct {
	name     string
	children []ast.Expr
	flags    map[string]string
}

// LoadCommands reads Forgejo's cmd/*.go with go/ast and returns its
// command tree: every cli.Command literal with its Name, Flags (inline,
// or through variables) and Subcommands. Every command also takes the
// global flags of appGlobalFlags (config, work and custom paths, help).
func LoadCommands(src string) (Commands, error) {
	fset := token.NewFileSet()
	pkgDir := filepath.Join(src, "cmd")
	entries, err := os.ReadDir(pkgDir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			f, err := parser.ParseFile(fset, filepath.Join(pkgDir, e.Name()), nil, 0)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
	}
	// Package-level variables and functions, to follow references.
	vars := map[string]ast.Expr{}
	funcs := map[string]*ast.FuncDecl{}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if vs, ok := s.(*ast.ValueSpec); ok {
						for i, n := range vs.Names {
							if i < len(vs.Values) {
								vars[n.Name] = vs.Values[i]
							}
						}
					}
				}
			case *ast.FuncDecl:
				funcs[d.Name.Name] = d
			}
		}
	}
	l := &cliLoader{vars: vars, nodes: map[ast.Expr]*cliNode{}}
	global := l.flags(funcs["appGlobalFlags"], 0)
	if len(global) == 0 {
		return nil, fmt.Errorf("%s: no appGlobalFlags", pkgDir)
	}
	global["help"], global["h"] = "BoolFlag", "BoolFlag"
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if cl, ok := n.(*ast.CompositeLit); ok && isCLI(cl.Type, "Command") {
				l.node(cl)
			}
			return true
		})
	}
	// Roots are the commands no other command lists.
	child := map[*cliNode]bool{}
	for _, n := range l.nodes {
		for _, c := range n.children {
			if cn := l.resolve(c); cn != nil {
				child[cn] = true
			}
		}
	}
	cmds := Commands{}
	var walk func(n *cliNode, prefix string, depth int)
	walk = func(n *cliNode, prefix string, depth int) {
		if depth > 8 || n.name == "" {
			return
		}
		path := strings.TrimSpace(prefix + " " + n.name)
		fl := map[string]string{}
		for k, v := range global {
			fl[k] = v
		}
		for k, v := range n.flags {
			fl[k] = v
		}
		cmds[path] = fl
		for _, c := range n.children {
			if cn := l.resolve(c); cn != nil {
				walk(cn, path, depth+1)
			}
		}
	}
	for _, n := range l.nodes {
		if !child[n] {
			walk(n, "", 0)
		}
	}
	if cmds["admin user create"] == nil {
		return nil, fmt.Errorf("%s: no command admin user create", pkgDir)
	}
	return cmds, nil
}

type cliLoader struct {
	vars  map[string]ast.Expr
	nodes map[ast.Expr]*cliNode
}

// isCLI reports whether a type expression is cli.<name> or *cli.<name>.
func isCLI(e ast.Expr, name string) bool {
	if u, ok := e.(*ast.StarExpr); ok {
		e = u.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "cli" && (name == "" && strings.HasSuffix(sel.Sel.Name, "Flag") || sel.Sel.Name == name)
}

// node records a cli.Command literal.
func (l *cliLoader) node(cl *ast.CompositeLit) *cliNode {
	if n := l.nodes[cl]; n != nil {
		return n
	}
	n := &cliNode{flags: map[string]string{}}
	l.nodes[cl] = n
	for _, e := range cl.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		switch key, _ := kv.Key.(*ast.Ident); key.Name {
		case "Name":
			n.name = stringLit(kv.Value)
		case "Subcommands", "Commands":
			if list, ok := kv.Value.(*ast.CompositeLit); ok {
				n.children = list.Elts
			}
		case "Flags":
			n.flags = l.flags(kv.Value, 0)
		}
	}
	return n
}

// resolve finds the command a Subcommands element names.
func (l *cliLoader) resolve(e ast.Expr) *cliNode {
	for range 5 {
		switch x := e.(type) {
		case *ast.UnaryExpr:
			e = x.X
			continue
		case *ast.Ident:
			if v := l.vars[x.Name]; v != nil {
				e = v
				continue
			}
			return nil
		case *ast.CompositeLit:
			if isCLI(x.Type, "Command") {
				return l.node(x)
			}
		}
		return nil
	}
	return nil
}

// flags collects the cli.*Flag literals under n, following identifiers
// of package-level variables.
func (l *cliLoader) flags(n ast.Node, depth int) map[string]string {
	out := map[string]string{}
	if n == nil || depth > 5 {
		return out
	}
	ast.Inspect(n, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.Ident:
			if v := l.vars[x.Name]; v != nil {
				for k, kind := range l.flags(v, depth+1) {
					out[k] = kind
				}
			}
		case *ast.CompositeLit:
			if !isCLI(x.Type, "") {
				return true
			}
			kind := x.Type.(*ast.SelectorExpr).Sel.Name
			for _, e := range x.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				switch key, _ := kv.Key.(*ast.Ident); key.Name {
				case "Name":
					out[stringLit(kv.Value)] = kind
				case "Aliases":
					if list, ok := kv.Value.(*ast.CompositeLit); ok {
						for _, a := range list.Elts {
							out[stringLit(a)] = kind
						}
					}
				}
			}
			return false
		}
		return true
	})
	delete(out, "")
	return out
}

func stringLit(e ast.Expr) string {
	if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
		s, err := strconv.Unquote(b.Value)
		if err == nil {
			return s
		}
	}
	return ""
}

// Invocation is one `forgejo …` command line found in a file.
type Invocation struct {
	Args  []string // after "forgejo"
	Where string
}

var forgejoCall = regexp.MustCompile(`(^|[\s;|&(])forgejo\s+admin\b`)

// FindInvocations returns the `forgejo admin …` commands of a shell text
// (a compose command, a script): continued lines are joined, each command
// is split into words as the shell would (quotes kept whole, expansions
// left as written) and ends at a pipe, redirection, ; or &.
func FindInvocations(text, where string) []Invocation {
	text = strings.ReplaceAll(text, "\\\n", " ")
	var out []Invocation
	for n, line := range strings.Split(text, "\n") {
		for _, loc := range forgejoCall.FindAllStringIndex(line, -1) {
			rest := line[loc[0]:]
			rest = rest[strings.Index(rest, "forgejo")+len("forgejo"):]
			out = append(out, Invocation{Args: shellWords(rest), Where: fmt.Sprintf("%s:%d", where, n+1)})
		}
	}
	return out
}

// shellWords splits s into words up to the first unquoted control
// character.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune("|;&<>)#", r):
			if inWord {
				words = append(words, cur.String())
			}
			return words
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// Parse splits an invocation into its subcommand path (the longest
// prefix of words that is a command), its flag names and whether each was
// given a value with "=".
func (c Commands) Parse(args []string) (path string, flags []string) {
	i := 0
	for ; i < len(args); i++ {
		next := strings.TrimSpace(path + " " + args[i])
		if strings.HasPrefix(args[i], "-") || c[next] == nil {
			break
		}
		path = next
	}
	for _, a := range args[i:] {
		if name, ok := strings.CutPrefix(a, "-"); ok {
			name = strings.TrimPrefix(name, "-")
			name, _, _ = strings.Cut(name, "=")
			flags = append(flags, name)
		}
	}
	return path, flags
}

// CheckInvocation reports a subcommand or flag Forgejo's CLI lacks.
func (c Commands) CheckInvocation(inv Invocation) []Finding {
	path, flags := c.Parse(inv.Args)
	want := strings.Join(firstWords(inv.Args), " ")
	if path != want {
		return []Finding{{"command forgejo " + want, "Forgejo's CLI has no command " + want + " (" + inv.Where + ")"}}
	}
	var out []Finding
	for _, f := range flags {
		if _, ok := c[path][f]; !ok {
			out = append(out, Finding{"flag forgejo " + path + " --" + f, "Forgejo's " + path + " has no flag --" + f + " (" + inv.Where + ")"})
		}
	}
	return out
}

// firstWords returns the words before the first flag, minus trailing
// positional arguments (a word that starts with $ or a quote is one).
func firstWords(args []string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.ContainsAny(a, "$") {
			break
		}
		out = append(out, a)
	}
	return out
}

// StandIn is the set of `forgejo` commands and flags the test image's
// stand-in accepts: path to flag name to whether it takes a value.
type StandIn map[string]map[string]bool

var standInCase = regexp.MustCompile(`(?m)^\s*"([a-z][a-z -]*)"\)\s*echo\s+"([^"]*)"\s*;;`)

// ParseStandIn reads the forgejo_flags table of the stand-in entrypoint
// (docker/test/forge-entrypoint.sh).
func ParseStandIn(script string) (StandIn, error) {
	start := strings.Index(script, "forgejo_flags() {")
	if start < 0 {
		return nil, fmt.Errorf("no forgejo_flags() in the stand-in script")
	}
	body := script[start:]
	if end := strings.Index(body, "\n}"); end >= 0 {
		body = body[:end]
	}
	s := StandIn{}
	for _, m := range standInCase.FindAllStringSubmatch(body, -1) {
		flags := map[string]bool{}
		for _, f := range strings.Fields(m[2]) {
			name, value := strings.CutSuffix(f, "=")
			flags[name] = value
		}
		s[m[1]] = flags
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("forgejo_flags() of the stand-in script lists no command")
	}
	return s, nil
}

// CompareStandIn reports where the stand-in accepts other commands or
// flags than the product uses (used: path to flag names), or takes a
// value for a flag Forgejo has as a boolean (or the reverse).
func (c Commands) CompareStandIn(s StandIn, used map[string]map[string]bool) []Finding {
	var out []Finding
	for _, path := range sortedKeys(used) {
		if s[path] == nil {
			out = append(out, Finding{"standin forgejo " + path, "the stand-in refuses " + path + ", which the product runs"})
		}
		for _, f := range sortedKeys(used[path]) {
			if _, ok := s[path][f]; !ok && s[path] != nil {
				out = append(out, Finding{"standin forgejo " + path + " --" + f, "the stand-in refuses --" + f + ", which the product passes"})
			}
		}
	}
	for _, path := range sortedKeys(s) {
		for _, f := range sortedKeys(s[path]) {
			if !used[path][f] {
				out = append(out, Finding{"standin forgejo " + path + " --" + f, "the stand-in accepts --" + f + ", which the product never passes"})
			}
			kind, ok := c[path][f]
			if ok && (kind == "BoolFlag") == s[path][f] {
				out = append(out, Finding{"standin forgejo " + path + " --" + f, "the stand-in's value for --" + f + " disagrees with Forgejo's " + kind})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

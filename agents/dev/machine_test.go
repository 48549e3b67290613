package dev

import (
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the stage diagram in doc.go and the golden prompts")

// declaredStages returns every Stage constant of the package's sources.
func declaredStages(t *testing.T) []Stage {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "machine.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []Stage
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if typ, ok := vs.Type.(*ast.Ident); !ok || typ.Name != "Stage" {
				continue
			}
			for k, n := range vs.Names {
				lit, ok := vs.Values[k].(*ast.BasicLit)
				if !ok {
					t.Fatalf("stage %s is not a literal", n.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, Stage(v))
			}
		}
	}
	return out
}

// TestMachineIsWellFormed: every stage has a row; live stages have a step
// and can be blocked; terminal ones lead nowhere (a new run starts from
// StageNone); every
// stage can be reached from a claim.
func TestMachineIsWellFormed(t *testing.T) {
	m := machine()
	stages := declaredStages(t)
	if len(m) != len(stages) {
		t.Errorf("table has %d rows, %d stages are declared", len(m), len(stages))
	}
	reach := map[Stage]bool{StageNone: true}
	for queue := []Stage{StageNone}; len(queue) > 0; queue = queue[1:] {
		for _, n := range m[queue[0]].next {
			if !reach[n] {
				reach[n] = true
				queue = append(queue, n)
			}
		}
	}
	for _, s := range stages {
		def, ok := m[s]
		switch {
		case !ok:
			t.Errorf("stage %q has no row", s)
			continue
		case def.does == "":
			t.Errorf("stage %q does not say what it does", s)
		case !reach[s]:
			t.Errorf("stage %q cannot be reached from a claim", s)
		case s == StageNone:
			continue
		case def.step == nil:
			t.Errorf("stage %q has no step", s)
		case s.Terminal() != (def.by == byNobody):
			t.Errorf("stage %q: Terminal() = %v but run by %v", s, s.Terminal(), def.by)
		case !s.Terminal() && !slices.Contains(def.next, StageBlocked):
			t.Errorf("live stage %q cannot be blocked, yet every failing step is bounded by a block", s)
		}
		for _, n := range def.next {
			if _, ok := m[n]; !ok {
				t.Errorf("%q leads to %q, which has no row", s, n)
			}
			if s.Terminal() {
				t.Errorf("terminal %q leads to %q; an ended run only starts over", s, n)
			}
		}
	}
}

// TestMoveRefusesWhatTheTableLacks: a move the table does not list fails
// and leaves the state as it was.
func TestMoveRefusesWhatTheTableLacks(t *testing.T) {
	h := newHarness(t, nil)
	st := State{Issue: 9, Stage: StageAwaitingCI, run: direct{h.led}}
	err := h.a.move(&st, StagePublishing)
	if !errors.Is(err, errTransition) || st.Stage != StageAwaitingCI {
		t.Fatalf("move awaiting_ci to publishing: %v, stage %q", err, st.Stage)
	}
	if _, ok := h.state(9); ok {
		t.Fatal("a refused move saved the state")
	}
	if err := h.a.move(&st, StageAwaitingReview); err != nil || st.From != StageAwaitingCI {
		t.Fatalf("allowed move: %v, from %q", err, st.From)
	}
}

// stageWrites lists the places in src that set a State's stage other than
// move (and the upgrade of legacy state files): assignments to a Stage
// field and Stage keys in composite literals.
func stageWrites(fset *token.FileSet, f *ast.File) []string {
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if ok && (fn.Name.Name == "move" || fn.Name.Name == "upgrade") {
			continue
		}
		ast.Inspect(d, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					if sel, ok := l.(*ast.SelectorExpr); ok && sel.Sel.Name == "Stage" {
						out = append(out, fset.Position(l.Pos()).String())
					}
				}
			case *ast.CompositeLit:
				if _, other := n.Type.(*ast.SelectorExpr); other {
					break // another package's type (agent.Item in a report)
				}
				for _, e := range n.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if k, isIdent := kv.Key.(*ast.Ident); isIdent && k.Name == "Stage" {
						out = append(out, fset.Position(kv.Pos()).String())
					}
				}
			}
			return true
		})
	}
	return out
}

// TestStagesChangeOnlyInMove: every stage change of the agent goes through
// move, which checks it against the table, so no transition the code takes
// is missing from the table. Together with the flow tests of this package
// (whose harness fails on a refused move) that covers every transition.
func TestStagesChangeOnlyInMove(t *testing.T) {
	t.Run("the check finds a write", func(t *testing.T) {
		fset := token.NewFileSet()
		src := "package dev\nfunc f(st *State) { st.Stage = StageDone; _ = State{Stage: StageDone} }\n"
		f, err := parser.ParseFile(fset, "x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := stageWrites(fset, f); len(got) != 2 {
			t.Fatalf("found %v, want both writes", got)
		}
	})
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range stageWrites(fset, f) {
			t.Errorf("%s sets a stage outside move", w)
		}
	}
}

// diagram draws the transition table for doc.go.
func diagram(m map[Stage]stageDef) string {
	order := []Stage{StageNone, StageImplementing, StageResuming, StageFixing, StageNudging, StagePublishing, StageHeld,
		StageAwaitingCI, StageAwaitingReview, StageAwaitingApproval, StageDone, StageRefused, StageBlocked, StageEscalated}
	by := map[driver]string{byNobody: "(ends)", byTick: "tick", inBackground: "background"}
	var b strings.Builder
	if len(order) != len(m) {
		// A stage of the table the drawing leaves out: it must be added
		// to order.
		fmt.Fprintf(&b, "// %d stages in the table, %d drawn\n", len(m), len(order))
	}
	for _, s := range order {
		def := m[s]
		name, runner := string(s), by[def.by]
		if s == StageNone {
			name, runner = "(none)", "claim"
		}
		next := make([]string, 0, len(def.next))
		for _, n := range def.next {
			next = append(next, string(n))
		}
		arrow := "-> " + strings.Join(next, ", ")
		if len(next) == 0 {
			arrow = "-> (nothing)"
		}
		fmt.Fprintf(&b, "//\t%-17s %-10s %s\n//\t%-17s %-10s   %s\n", name, runner, def.does, "", "", arrow)
	}
	return b.String()
}

const (
	diagramBegin = "// Stages (drawn from machine.go by go test -run TestDiagram -update):\n//\n"
	diagramEnd   = "//\n// Blocked is reachable"
)

// TestDiagram keeps the drawing of the table in doc.go current.
func TestDiagram(t *testing.T) {
	data, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, diagramBegin), strings.Index(doc, diagramEnd)
	if i < 0 || j < i {
		t.Fatal("doc.go lacks the diagram's markers")
	}
	want := doc[:i+len(diagramBegin)] + diagram(machine()) + doc[j:]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile("doc.go", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error("the diagram in doc.go is out of date; run go test ./agents/dev -run TestDiagram -update")
}

// TestLegacyFlagsBecomeStages: a state file of an earlier release, which
// kept flags instead of stages, loads as the stage the flags stood for.
func TestLegacyFlagsBecomeStages(t *testing.T) {
	cases := []struct {
		name, json  string
		stage, from Stage
	}{
		{"session ran", `{"issue":1,"stage":"implementing","ran":true}`, StagePublishing, ""},
		{"nudge ran", `{"issue":1,"stage":"implementing","ran":true,"nudged":true}`, StagePublishing, StageNudging},
		{"nudge interrupted", `{"issue":1,"stage":"implementing","nudged":true}`, StageNudging, ""},
		{"sent back", `{"issue":1,"stage":"implementing","resumed":true}`, StageResuming, ""},
		{"fix ran", `{"issue":1,"stage":"fixing","ran":true}`, StagePublishing, ""},
		{"waiting, once nudged", `{"issue":1,"stage":"awaiting_ci","nudged":true}`, StageAwaitingCI, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := store{root: t.TempDir()}
			if err := os.MkdirAll(s.dir(1), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(s.dir(1), "state.json"), []byte(tc.json), 0o600); err != nil {
				t.Fatal(err)
			}
			st, ok, err := s.load(1)
			if err != nil || !ok || st.Stage != tc.stage || st.From != tc.from {
				t.Fatalf("loaded %q from %q (%v, %v), want %q from %q", st.Stage, st.From, ok, err, tc.stage, tc.from)
			}
		})
	}
}

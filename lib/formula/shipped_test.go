package formula_test

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/phase"
)

var update = flag.Bool("update", false, "rewrite the golden prompts")

// shippedFS is the formulas directory the binary embeds. It is read from
// disk because the formulas package may import nothing (and be imported by
// nothing below cmd).
var shippedFS = os.DirFS("../../formulas")

// The formulas the agents and sidecars load by name.
var shipped = []string{
	"chat", "dev", "digest", "mirror-push", "release", "reproduce", "review-pr", "run-architect",
	"run-gardener", "run-planner", "run-predictor", "run-supervisor", "triage",
}

func TestShippedFormulasLint(t *testing.T) {
	all, err := formula.LoadAll(shippedFS)
	if err != nil {
		t.Fatalf("shipped formulas do not lint:\n%v", err)
	}
	var names []string
	for _, f := range all {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	if strings.Join(names, " ") != strings.Join(shipped, " ") {
		t.Errorf("shipped formulas %v, want %v", names, shipped)
	}
}

// Every formula tells the model what it gets, what it must produce and
// what bounds it.
func TestShippedFormulasStateInputsOutputsLimits(t *testing.T) {
	for _, name := range shipped {
		f, err := formula.Load(shippedFS, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range []string{"Inputs:", "Outputs:", "Limits:"} {
			if !strings.Contains(f.Description, part) {
				t.Errorf("%s: description lacks %q", name, part)
			}
		}
	}
}

// The orchestrators are written against these exact contracts; the
// formulas must state them in the same words as the renderer.
func TestContractsStatedExactly(t *testing.T) {
	dev, err := formula.Load(shippedFS, "dev")
	if err != nil {
		t.Fatal(err)
	}
	text := dev.Text()
	for _, want := range []string{
		phase.AwaitingCI.Line(), phase.AwaitingReview.Line(), phase.Escalate.Line(),
		phase.Failed.Line(), phase.Done.Line(), "Reason:",
		formula.ResultSchema, "`fix: {{issue_title}} (#{{issue}})`", "no forge credential",
		"$DISINTO_RESULT_FILE",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("dev formula does not state %q", want)
		}
	}
	review, err := formula.Load(shippedFS, "review-pr")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{formula.ReviewSchema, "$DISINTO_REVIEW_FILE"} {
		if !strings.Contains(review.Text(), want) {
			t.Errorf("review-pr formula does not state %q", want)
		}
	}
	for _, name := range shipped {
		f, _ := formula.Load(shippedFS, name)
		if name != "dev" && strings.Contains(f.Text(), "PHASE:") {
			t.Errorf("%s talks about phase files; only dev uses them", name)
		}
	}
}

// Every formula renders once its required variables have values.
func TestShippedFormulasRender(t *testing.T) {
	for _, name := range shipped {
		t.Run(name, func(t *testing.T) {
			f, err := formula.Load(shippedFS, name)
			if err != nil {
				t.Fatal(err)
			}
			vars := map[string]string{}
			for _, v := range f.Vars {
				if v.Required {
					vars[v.Name] = "<" + v.Name + ">"
				}
			}
			out, err := formula.Render(f, formula.RenderInput{Role: name, Vars: vars, Logger: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, "{{") && !strings.Contains(out, "{{.") {
				t.Errorf("unfilled placeholder in\n%s", out)
			}
		})
	}
}

func TestGoldenPrompts(t *testing.T) {
	repo := fstest.MapFS{"AGENTS.md": {Data: []byte("# demo\n\nGo service. Run `make test` before pushing.\n")}}
	env := []formula.EnvVar{{Name: "PROJECT_REPO_ROOT", Value: "/data/repos/demo"}}
	tests := []struct {
		name string
		in   formula.RenderInput
	}{
		{"dev", formula.RenderInput{
			Role: "dev", Project: "demo", Repo: "acme/demo",
			ForgeAPI: "http://forgejo:3000/api/v1/repos/acme/demo", TokenEnv: "FORGE_TOKEN",
			Vars:      map[string]string{"issue": "42", "issue_title": "Add a health endpoint"},
			RepoFS:    repo,
			Blocks:    []formula.Block{{Title: "Issue #42: Add a health endpoint", Body: "Serve GET /healthz returning 200.\n\n## Acceptance criteria\n- [ ] /healthz answers 200"}},
			Lessons:   "Run the full test suite before pushing; CI is slower than you are.",
			Protocols: []formula.Protocol{formula.ProtocolPhase, formula.ProtocolResult},
			PhaseFile: "/data/state/demo/issue-42/phase", ResultFile: "/data/state/demo/issue-42/result.json",
			Branch: "fix/issue-42", PrimaryBranch: "main",
			Env: env,
		}},
		{"review-pr", formula.RenderInput{
			Role: "review", Project: "demo", Repo: "acme/demo",
			ForgeAPI: "http://forgejo:3000/api/v1/repos/acme/demo", TokenEnv: "FORGE_REVIEW_TOKEN",
			Vars:       map[string]string{"pr": "7"},
			RepoFS:     repo,
			Blocks:     []formula.Block{{Title: "Pull request #7: fix: Add a health endpoint (#42)", Body: "fix/issue-42 -> main, head 0123abcd, CI success\n\n### Diff\n\n```diff\n+func health() {}\n```"}},
			Protocols:  []formula.Protocol{formula.ProtocolReview},
			ReviewFile: "/data/state/demo/pr-7/review.json",
			Env:        env,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := formula.Load(shippedFS, tt.name)
			if err != nil {
				t.Fatal(err)
			}
			tt.in.Logger = zerolog.Nop()
			got, err := formula.Render(f, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, got)
		})
	}
}

// golden compares got with testdata/golden/<name>.golden, which -update
// rewrites.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./lib/formula -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update and review the diff):\n%s", path, got)
	}
}

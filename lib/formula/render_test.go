package formula_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/formula"
)

func sample(t *testing.T) *formula.Formula {
	t.Helper()
	data, err := os.ReadFile("testdata/valid/sample.toml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := formula.Parse("testdata/valid/sample.toml", data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func sampleInput(log *bytes.Buffer) formula.RenderInput {
	return formula.RenderInput{
		Role:     "builder",
		Project:  "demo",
		Repo:     "acme/demo",
		ForgeAPI: "http://forge:3000/api/v1/repos/acme/demo",
		TokenEnv: "FORGE_TOKEN",
		Vars:     map[string]string{"target": "all"},
		RepoFS:   fstest.MapFS{"AGENTS.md": {Data: []byte("# Agents\nrules\n")}},
		OpsFS:    fstest.MapFS{"RESOURCES.md": {Data: []byte("# Resources\n")}},
		Logger:   zerolog.New(log),
	}
}

func TestRenderSubstitutesVarsAndKeepsShell(t *testing.T) {
	var log bytes.Buffer
	out, err := formula.Render(sample(t), sampleInput(&log))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Build all for project demo.",     // description: supplied var and built-in project
		"### Step 1: Build all (`build`)", // title substituted, topological order
		"Run `make all -v`.",              // default applied
		"$PROJECT_REPO_ROOT and {{.State}} alone.",
		"### Step 3: Report (`report`)\n\nNeeds: build, test\n",
		"### AGENTS.md\n\n" + formula.Untrusted("# Agents\nrules") + "\n",
		"### RESOURCES.md\n\n" + formula.Untrusted("# Resources") + "\n",
		"Authenticate with the header `Authorization: token ${FORGE_TOKEN}`",
		"- FORGE_TOKEN (secret; use it only through the shell)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("prompt lacks %q\n%s", want, out)
		}
	}
	if strings.Contains(out, "maintainer's comment") {
		t.Error("TOML comments reached the prompt")
	}
	if !strings.Contains(log.String(), `"file":"MISSING.md"`) || !strings.Contains(log.String(), "context file missing, skipped") {
		t.Errorf("missing context file not logged: %s", log.String())
	}
}

func TestRenderBlockOrder(t *testing.T) {
	in := sampleInput(&bytes.Buffer{})
	in.Blocks = []formula.Block{{Title: "Pull request", Body: "diff"}}
	in.Lessons = "be brief"
	in.Scratch = "half done"
	in.ScratchFile = "/state/scratch.md"
	in.Protocols = []formula.Protocol{formula.ProtocolReview}
	in.ReviewFile = "/state/review.json"
	out, err := formula.Render(sample(t), in)
	if err != nil {
		t.Fatal(err)
	}
	order := []string{
		"You are the builder agent of disinto",
		"## Project context",
		"## Pull request",
		"## Lessons learned",
		"## Previous context (from your scratch file)",
		"## Task: sample (version 2)",
		"## Review output",
		"## Scratch file",
		"## Environment",
	}
	last := -1
	for _, h := range order {
		i := strings.Index(out, h)
		if i < 0 || i < last {
			t.Fatalf("%q missing or out of order in\n%s", h, out)
		}
		last = i
	}
	if strings.Count(out, "## Lessons learned") != 1 {
		t.Error("lessons heading repeated")
	}
	if !strings.Contains(out, "- DISINTO_REVIEW_FILE=/state/review.json") || !strings.Contains(out, "- DISINTO_SCRATCH_FILE=/state/scratch.md") {
		t.Errorf("protocol env names missing:\n%s", out)
	}
}

func TestRenderVarErrors(t *testing.T) {
	f := sample(t)
	tests := []struct {
		name string
		vars map[string]string
		want error
		msg  string
	}{
		{"missing required", map[string]string{}, formula.ErrMissingVar,
			"testdata/valid/sample.toml:13: vars.target: required variable has no value"},
		{"undeclared value", map[string]string{"target": "x", "colour": "red"}, formula.ErrUndeclaredVar,
			`testdata/valid/sample.toml: vars.colour: a value is given for "colour", which the formula does not declare`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := sampleInput(&bytes.Buffer{})
			in.Vars = tt.vars
			in.StrictVars = true
			_, err := formula.Render(f, in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if err.Error() != tt.msg {
				t.Errorf("message\n got: %s\nwant: %s", err, tt.msg)
			}
		})
	}
	// Without StrictVars an extra value is ignored.
	in0 := sampleInput(&bytes.Buffer{})
	in0.Vars = map[string]string{"target": "x", "colour": "red"}
	if _, err := formula.Render(f, in0); err != nil {
		t.Errorf("extra value without StrictVars: %v", err)
	}
	// A required variable without a value and without a built-in source.
	in := sampleInput(&bytes.Buffer{})
	in.Project = ""
	if _, err := formula.Render(f, in); !errors.Is(err, formula.ErrMissingVar) || !strings.Contains(err.Error(), "vars.project") {
		t.Errorf("project var: %v", err)
	}
}

func TestRenderBoundsLessonsAndScratch(t *testing.T) {
	var log bytes.Buffer
	in := sampleInput(&log)
	// 3000 bytes of two-byte runes with an odd prefix, so the 2048-byte cut
	// falls inside a rune and must step back.
	in.Lessons = "x" + strings.Repeat("é", 1500)
	in.Scratch = strings.Repeat("s", 20000)
	out, err := formula.Render(sample(t), in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "[... truncated: 2047 of 3001 bytes shown]") {
		t.Errorf("lessons not cut on a rune boundary:\n%s", out[:200])
	}
	if !strings.Contains(out, strings.Repeat("s", 8192)+"\n[... truncated: 8192 of 20000 bytes shown]") {
		t.Error("scratch not cut at 8192 bytes")
	}
	if strings.Contains(out, "\uFFFD") {
		t.Error("invalid UTF-8 in prompt")
	}
	if strings.Count(log.String(), "prompt block truncated") != 2 {
		t.Errorf("truncations not logged: %s", log.String())
	}
}

func TestRenderNeverShowsSecretValues(t *testing.T) {
	in := sampleInput(&bytes.Buffer{})
	in.SecretEnv = []string{"GITHUB_TOKEN"}
	in.Env = []formula.EnvVar{{Name: "GITHUB_TOKEN", Value: "ghp_secret"}, {Name: "PROJECT_REPO_ROOT", Value: "/repo"}}
	out, err := formula.Render(sample(t), in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "ghp_secret") {
		t.Error("secret value rendered")
	}
	if !strings.Contains(out, "- GITHUB_TOKEN (secret; use it only through the shell)") || !strings.Contains(out, "- PROJECT_REPO_ROOT=/repo") {
		t.Errorf("environment section:\n%s", out)
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	f := sample(t)
	in := sampleInput(&bytes.Buffer{})
	in.Env = []formula.EnvVar{{Name: "B", Value: "2"}, {Name: "A", Value: "1"}}
	in.SecretEnv = []string{"Z_TOKEN", "A_TOKEN"}
	first, err := formula.Render(f, in)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, _ := formula.Render(f, in)
		if again != first {
			t.Fatal("two renders of the same input differ")
		}
	}
}

func TestRenderUnknownProtocol(t *testing.T) {
	in := sampleInput(&bytes.Buffer{})
	in.Protocols = []formula.Protocol{"carrier-pigeon"}
	if _, err := formula.Render(sample(t), in); err == nil {
		t.Error("unknown protocol accepted")
	}
}

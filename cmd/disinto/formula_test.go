package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/formula"
)

func TestFormulaLintShipped(t *testing.T) {
	// Every formula file on disk is embedded in the binary.
	files, err := filepath.Glob("../../formulas/*.toml")
	if err != nil || len(files) < 12 {
		t.Fatalf("glob formulas: %v %v", files, err)
	}
	want := fmt.Sprintf("ok: %d formula(s)\n", len(files))
	code, out, errOut := runCLI(t, nil, "formula", "lint")
	if code != exitOK || out != want {
		t.Fatalf("lint embedded: code %d, want %q\nstdout: %s\nstderr: %s", code, want, out, errOut)
	}
	// The same files on disk, as the test command lints them.
	code, out, errOut = runCLI(t, nil, append([]string{"formula", "lint"}, files...)...)
	if code != exitOK || out != want {
		t.Fatalf("lint files: code %d, want %q\nstdout: %s\nstderr: %s", code, want, out, errOut)
	}
}

func TestFormulaLintProblems(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	writeFile(t, bad, "name = \"bad\"\ndescription = \"d\"\nversion = 1\n\n[[steps]]\nid = \"a\"\ntitle = \"A\"\nneeds = [\"b\"]\ndescription = \"x\"\n")
	good := filepath.Join(dir, "good.toml")
	writeFile(t, good, "name = \"good\"\ndescription = \"d\"\nversion = 1\n[[steps]]\nid = \"a\"\ntitle = \"A\"\ndescription = \"x\"\n")
	code, out, errOut := runCLI(t, nil, "formula", "lint", good, bad)
	if code != exitFailure {
		t.Fatalf("code %d, want 1", code)
	}
	want := bad + `:8: steps[0].needs: step "a" needs "b", which is not a step of this formula` + "\n"
	if errOut != want || out != "" {
		t.Errorf("stderr %q, want %q (stdout %q)", errOut, want, out)
	}
}

func TestFormulaRender(t *testing.T) {
	t.Run("missing vars are listed with their lines", func(t *testing.T) {
		code, _, errOut := runCLI(t, nil, "formula", "render", "dev")
		if code != exitFailure {
			t.Fatalf("code %d, want 1", code)
		}
		src := strings.Split(readFile(t, "../../formulas/dev.toml"), "\n")
		lineOf := func(header string) int {
			for i, l := range src {
				if l == header {
					return i + 1
				}
			}
			t.Fatalf("%s not in dev.toml", header)
			return 0
		}
		for _, want := range []string{
			fmt.Sprintf("dev.toml:%d: vars.issue: required variable has no value", lineOf("[vars.issue]")),
			fmt.Sprintf("dev.toml:%d: vars.issue_title: required variable has no value", lineOf("[vars.issue_title]")),
			fmt.Sprintf("dev.toml:%d: vars.project: required variable has no value", lineOf("[vars.project]")),
		} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errOut)
			}
		}
	})
	t.Run("dev with vars", func(t *testing.T) {
		code, out, errOut := runCLI(t, nil, "formula", "render", "dev", "--data-dir", "/data",
			"--var", "issue=42", "--var", "issue_title=Add a health endpoint", "--var", "project=demo")
		if code != exitOK {
			t.Fatalf("code %d\n%s", code, errOut)
		}
		for _, want := range []string{"You are the dev agent", "`fix: Add a health endpoint (#42)`", "- DISINTO_PHASE_FILE=/data/state/<project>/issue-42/phase", "## Phase protocol", "## Result file"} {
			if !strings.Contains(out, want) {
				t.Errorf("prompt lacks %q", want)
			}
		}
	})
	t.Run("with a project", func(t *testing.T) {
		dir := t.TempDir()
		data := strings.Replace(readFile(t, "../../projects/example.toml.example"), "name = \"example\"", "name = \"demo\"", 1)
		writeFile(t, filepath.Join(dir, "projects", "demo.toml"), data)
		repo := filepath.Join(dir, "repo")
		writeFile(t, filepath.Join(repo, "AGENTS.md"), "# Demo agents guide\n")
		env := []string{"FORGE_TOKEN=tok-do-not-print-1234567890"}
		code, out, errOut := runCLI(t, env, "formula", "render", "review-pr", "--projects-dir", filepath.Join(dir, "projects"),
			"--env-file", filepath.Join(dir, "none.env"), "--project", "demo", "--repo-dir", repo, "--var", "pr=7")
		if code != exitOK {
			t.Fatalf("code %d\n%s", code, errOut)
		}
		for _, want := range []string{
			"You are the review agent of disinto, an autonomous code factory, working on project demo (repository disinto-admin/example).",
			"### AGENTS.md\n\n" + formula.Untrusted("# Demo agents guide"),
			"Forge API base: http://localhost:3000/api/v1/repos/disinto-admin/example",
			"Review pull request #7 of demo",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("prompt lacks %q\n%s", want, out)
			}
		}
		if strings.Contains(out+errOut, "tok-do-not-print") {
			t.Error("token value printed")
		}
		if !strings.Contains(errOut, "formula resolved") || !strings.Contains(errOut, "source=embedded") {
			t.Errorf("chosen source not logged: %s", errOut)
		}
		if code, _, _ := runCLI(t, env, "formula", "render", "review-pr", "--projects-dir", filepath.Join(dir, "projects"),
			"--env-file", filepath.Join(dir, "none.env"), "--project", "nope"); code != exitUsage {
			t.Errorf("unknown project: code %d, want 2", code)
		}
	})
	t.Run("usage errors", func(t *testing.T) {
		if code, _, errOut := runCLI(t, nil, "formula", "render", "no-such-formula"); code != exitUsage || !strings.Contains(errOut, "shipped: ") || !strings.Contains(errOut, " dev,") {
			t.Errorf("unknown formula: code %d %s", code, errOut)
		}
		if code, _, errOut := runCLI(t, nil, "formula", "render", "review-pr", "--var", "pr=1", "--var", "project=p", "--var", "colour=red"); code != exitFailure || !strings.Contains(errOut, "vars.colour") {
			t.Errorf("undeclared --var: code %d %s", code, errOut)
		}
		if code, _, _ := runCLI(t, nil, "formula", "render", "dev", "--var", "novalue"); code != exitUsage {
			t.Errorf("bad --var: code %d", code)
		}
		if code, _, _ := runCLI(t, nil, "formula", "render"); code != exitUsage {
			t.Errorf("no name: code %d", code)
		}
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/cilog/cilogtest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

func TestParseHeadArg(t *testing.T) {
	for _, c := range []struct {
		in  string
		pr  int64
		sha string
		ok  bool
	}{
		{"42", 42, "", true}, {"#7", 7, "", true}, {"3F2C9A1E", 0, "3f2c9a1e", true},
		{"0123456789abcdef0123456789abcdef01234567", 0, "0123456789abcdef0123456789abcdef01234567", true},
		{"0", 0, "", false}, {"#x", 0, "", false}, {"main", 0, "", false}, {"zzzzzzzz", 0, "", false}, {"", 0, "", false},
	} {
		pr, sha, err := parseHeadArg(c.in)
		if (err == nil) != c.ok || pr != c.pr || sha != c.sha {
			t.Errorf("parseHeadArg(%q) = %d, %q, %v", c.in, pr, sha, err)
		}
	}
}

// TestCILogsAgainstRealForge: a real Gitea with Actions runs a pull
// request's workflow, a runner reports a failed build, and disinto
// ci-logs prints the log the dev agent reads for that head; a Woodpecker
// project's commit gets its pipeline's step log; a head that is green, a
// pull request that does not exist, an unknown project and a project
// without CI each get their line.
func TestCILogsAgainstRealForge(t *testing.T) {
	const buildErr = "./widget.go:12:2: undefined: frobnicateQ9x"
	srv := forgetest.StartWith(t, forgetest.Options{Actions: true})
	ctx := t.Context()
	proj := srv.NewProject(t, "demo")
	repo := proj.Repo
	runner := srv.NewRunner(t, "ubuntu-latest")
	put := func(path, branch, content string) {
		t.Helper()
		if _, err := repo.PutFile(ctx, forge.FileChange{Path: path, Branch: branch, Message: "add " + path, Content: []byte(content)}); err != nil {
			t.Fatal(err)
		}
	}
	put(".gitea/workflows/ci.yml", "main",
		"name: ci\non: pull_request\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - run: go build ./...\n")
	if _, err := repo.CreateBranch(ctx, "fix/issue-1", "main"); err != nil {
		t.Fatal(err)
	}
	put("widget.go", "fix/issue-1", "package widget\n")
	pr, err := repo.CreatePull(ctx, forge.NewPull{Title: "widget", Head: "fix/issue-1", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	task := runner.Next(t, 2*time.Minute)
	if task.SHA != pr.HeadSHA {
		t.Fatalf("job runs on %s, the pull request's head is %s", task.SHA, pr.HeadSHA)
	}
	runner.Finish(t, task, []string{"go build ./...", "# example.com/widget", buildErr, "exit status 1"}, true)
	waitState(t, repo, pr.HeadSHA, forge.CIFailure)

	wp := cilogtest.StartWoodpecker(t, 5, "wp-token-cilogs-0001")
	const wpErr = "--- FAIL: TestWidgetZ4 (0.00s)"
	tip, err := repo.GetBranch(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	wp.AddPipeline(3, tip.SHA, cilogtest.Step{Name: "clone", State: "success"},
		cilogtest.Step{Name: "test", State: "failure", ExitCode: 1, Log: []string{"+ go test ./...", wpErr, "FAIL"}})
	if err := repo.CreateStatus(ctx, tip.SHA, forge.CommitStatus{Context: "ci/woodpecker/push/test", State: forge.CIFailure,
		Description: "Pipeline failed", TargetURL: wp.URL + "/repos/5/pipeline/3"}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	projects, env, data := filepath.Join(dir, "projects"), filepath.Join(dir, ".env"), filepath.Join(dir, "data")
	project := func(name, ci string) {
		writeFile(t, filepath.Join(projects, name+".toml"), fmt.Sprintf("name = %q\nrepo = %q\nforge_url = %q\n\n[ci]\n%s\n",
			name, repo.Slug(), srv.URL, ci))
	}
	project("demo", `system = "statuses"`)
	project("wood", "system = \"woodpecker\"\nwoodpecker_repo_id = 5")
	project("bare", `system = "none"`)
	writeFile(t, env, "FORGE_TOKEN="+proj.Dev.Token+"\nFORGE_PASS="+proj.Dev.Password+"\nFORGE_BOT_USER_DEV="+proj.Dev.Login+
		"\nWOODPECKER_SERVER="+wp.URL+"\nWOODPECKER_TOKEN="+wp.Token+"\n")
	flags := []string{"--projects-dir", projects, "--env-file", env, "--data-dir", data}
	cli := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, nil, append(append([]string{"ci-logs"}, args...), flags...)...)
		if code != want {
			t.Fatalf("%v: code %d, want %d\n%s\n%s", args, code, want, out, errOut)
		}
		for _, secret := range []string{proj.Dev.Token, proj.Dev.Password, wp.Token} {
			if strings.Contains(out+errOut, secret) {
				t.Fatalf("%v printed a credential", args)
			}
		}
		return out + errOut
	}

	out := cli(exitOK, "--project", "demo", fmt.Sprint(pr.Number))
	t.Logf("disinto ci-logs printed:\n%s", out)
	for _, want := range []string{"pull request #1, head " + pr.HeadSHA, "CI: failure", "Log: actions, job ci / build",
		"--- the session is given:", buildErr, "Log of job ci / build (pull_request) (actions)"} {
		if !strings.Contains(out, want) {
			t.Errorf("actions: no %q in\n%s", want, out)
		}
	}
	out = cli(exitOK, "--project", "wood", tip.SHA[:10])
	for _, want := range []string{"commit " + tip.SHA, "Log: woodpecker, pipeline 3", wpErr, "ci/woodpecker/push/test: failure: Pipeline failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("woodpecker: no %q in\n%s", want, out)
		}
	}
	if wp.Requests("/api/repos/5/pipelines") == 0 {
		t.Error("the Woodpecker server was never asked")
	}
	// A fresh commit has no status at all.
	put("NOTES.md", "main", "notes\n")
	fresh, err := repo.GetBranch(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if out := cli(exitOK, "--project", "demo", fresh.SHA); !strings.Contains(out, "CI: no status") ||
		!strings.Contains(out, "not red") || strings.Contains(out, "the session is given") {
		t.Errorf("a head without CI: %s", out)
	}
	if out := cli(exitFailure, "--project", "demo", "99"); !strings.Contains(out, "pull request #99 not found in "+repo.Slug()) {
		t.Errorf("missing pull request: %s", out)
	}
	if out := cli(exitUsage, "--project", "nope", "1"); !strings.Contains(out, `unknown project "nope"`) {
		t.Errorf("unknown project: %s", out)
	}
	if out := cli(exitFailure, "--project", "bare", "1"); !strings.Contains(out, "project bare has no CI") || !strings.Contains(out, "bare.toml") {
		t.Errorf("project without CI: %s", out)
	}
	if out := cli(exitFailure, "--project", "demo", "abcdef0123"); !strings.Contains(out, "commit abcdef0123 not found in "+repo.Slug()) {
		t.Errorf("missing commit: %s", out)
	}
	if out := cli(exitUsage, "--project", "demo", "main"); !strings.Contains(out, "neither a pull request number nor a commit id") {
		t.Errorf("bad head: %s", out)
	}
}

// waitState waits until sha's combined status is state.
func waitState(t *testing.T, repo *forge.RepoClient, sha string, state forge.CIState) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		cs, err := repo.CombinedStatus(ctx, sha)
		if err == nil && cs.State == state {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("status of %s never %s (last %+v, %v)", sha, state, cs, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

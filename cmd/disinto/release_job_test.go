package main

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/release"
	"github.com/disinto/disinto/lib/vault"
)

// runnerJobEnv is the environment the runner gives the release job Plan
// builds for a (Plan's variables and the secrets directory).
func runnerJobEnv(t *testing.T, a vault.Action, secretsDir string) []string {
	t.Helper()
	plan, err := release.Plan(a, release.Target{ForgeURL: "http://forgejo:3000", Repo: "acme/widgets"})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Script != "exec "+release.JobCommand || !strings.HasPrefix(release.JobCommand, "disinto runner-job release") {
		t.Fatalf("the job runs %q", plan.Script)
	}
	env := []string{envSecretsDir + "=" + secretsDir}
	for k, v := range plan.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// The release job's command is hidden from the help, refuses an
// environment Plan never builds naming the variable, and without the
// forge token prints a failed result (exit 1) that the daemon's check
// accepts.
func TestRunnerJobRelease(t *testing.T) {
	code, out, _ := runCLI(t, nil, "--help")
	if code != exitOK || strings.Contains(out, "runner-job") {
		t.Errorf("help lists the runner's job (exit %d):\n%s", code, out)
	}
	a, err := release.Request{Project: "widgets", Version: "v1.2.0", SHA: strings.Repeat("a", 40)}.Action()
	if err != nil {
		t.Fatal(err)
	}
	env := runnerJobEnv(t, a, t.TempDir())

	bad := append(append([]string(nil), env...), "RELEASE_VERSION=v1.2")
	code, out, errOut := runCLI(t, bad, "runner-job", "release")
	if code != exitFailure || out != "" || !strings.Contains(errOut, "RELEASE_VERSION") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("bad version: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	code, out, errOut = runCLI(t, env, "runner-job", "release")
	plan, _ := release.Plan(a, release.Target{ForgeURL: "http://forgejo:3000", Repo: "acme/widgets"})
	res, err := release.ParseResult(out, plan)
	if code != exitFailure || err != nil || res.Status != release.StatusFailed || !strings.Contains(res.Reason, release.TokenSecret) {
		t.Errorf("no token: exit %d, %+v, %v\nstdout %s\nstderr %s", code, res, err, out, errOut)
	}
}

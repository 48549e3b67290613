package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/runner"
	"github.com/disinto/disinto/lib/vault"
)

// scriptedRunner answers every job with out and err, and keeps the jobs.
type scriptedRunner struct {
	out  runner.Outcome
	err  error
	jobs []runner.Job
}

func (s *scriptedRunner) Run(_ context.Context, j runner.Job) (runner.Outcome, error) {
	s.jobs = append(s.jobs, j)
	return s.out, s.err
}

// publishFormula is a reasoning formula (release is mechanical, see
// release_test.go).
const publishFormula = `name = "publish-notes"
description = "Release version {{version}} of {{project}}: publish its notes."
version = 1

[vars.version]
description = "The version."
required = true

[vars.project]
description = "The project."
required = true

[[steps]]
id = "publish"
title = "Publish"
description = "Publish the notes."
`

func releaseJob(t *testing.T) vault.Job {
	t.Helper()
	text := []byte(publishFormula)
	return vault.Job{
		Action: vault.Action{ID: "release-v1-2-0", Formula: "publish-notes", Secrets: []string{"MIRROR_TOKEN"},
			Vars: map[string]string{"version": "v1.2.0"}},
		Content: []byte("id = \"release-v1-2-0\"\nformula = \"release\"\n"),
		Formula: text, Secrets: map[string]string{"MIRROR_TOKEN": "mirror-secret-value"},
		Timeout: 10 * time.Minute, OpsCommit: "abc123",
	}
}

// The runner's job is the release formula rendered with the action's and
// the project's values, a reasoning session with the action's secrets and
// the model key, on the configured network.
func TestVaultRunnerBuildsTheJob(t *testing.T) {
	sr := &scriptedRunner{out: runner.Outcome{ExitCode: 0, Log: "done", Started: time.Now()}}
	v := &vaultRunner{r: sr, network: "disinto_net",
		project: &config.Project{Name: "widgets", Repo: "acme/widgets", ForgeURL: "http://forge:3000", PrimaryBranch: "main"},
		backend: config.Backend{APIKey: "sk-model-key-123456", BaseURL: "http://model:1", Model: "claude-x"}}
	out, err := v.Run(context.Background(), releaseJob(t))
	if err != nil || out.ExitCode != 0 || out.Logs != "done" {
		t.Fatalf("Run = %+v, %v", out, err)
	}
	j := sr.jobs[0]
	if j.ID != "release-v1-2-0" || j.Kind != runner.Reasoning || j.Network != "disinto_net" || j.Model != "claude-x" || j.Timeout != 10*time.Minute {
		t.Errorf("job = %+v", j)
	}
	if j.Secrets["MIRROR_TOKEN"] != "mirror-secret-value" || j.Secrets["ANTHROPIC_API_KEY"] != "sk-model-key-123456" || len(j.Secrets) != 2 {
		t.Errorf("secrets = %v, want the action's and the model key", j.Secrets)
	}
	if j.Env["ANTHROPIC_BASE_URL"] != "http://model:1" {
		t.Errorf("env = %v", j.Env)
	}
	for _, want := range []string{"Release version v1.2.0 of widgets", "/run/secrets/MIRROR_TOKEN", "ops commit abc123", "release-v1-2-0"} {
		if !strings.Contains(j.Script, want) {
			t.Errorf("prompt lacks %q:\n%s", want, j.Script)
		}
	}
	if strings.Contains(j.Script, "mirror-secret-value") || strings.Contains(j.Script, "sk-model-key") {
		t.Error("the prompt holds a secret value")
	}
}

// Only a run that never started is an error (the dispatcher tries again);
// a timeout, an interruption and a job that can never run are outcomes,
// so the action is never run twice.
func TestVaultRunnerOutcomes(t *testing.T) {
	proj := &config.Project{Name: "widgets", Repo: "acme/widgets", PrimaryBranch: "main"}
	started := time.Now()
	for _, tc := range []struct {
		name     string
		out      runner.Outcome
		err      error
		backend  config.Backend
		wantErr  bool
		timedOut bool
		logHas   string
	}{
		{"timed out", runner.Outcome{ExitCode: 137, Started: started, Log: "partial"}, runner.ErrTimeout, config.Backend{APIKey: "sk-key-abcdef"}, false, true, "partial"},
		{"interrupted", runner.Outcome{ExitCode: 137, Started: started, Log: "half"}, context.Canceled, config.Backend{APIKey: "sk-key-abcdef"}, false, false, "interrupted"},
		{"engine down", runner.Outcome{ExitCode: -1}, runner.ErrEngine, config.Backend{APIKey: "sk-key-abcdef"}, true, false, ""},
		{"invalid", runner.Outcome{ExitCode: -1}, &runner.JobError{ID: "x", Field: "secrets", Reason: "too short"}, config.Backend{APIKey: "sk-key-abcdef"}, false, false, "refused before it ran"},
		{"no model key", runner.Outcome{}, nil, config.Backend{}, false, false, "no model credential"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sr := &scriptedRunner{out: tc.out, err: tc.err}
			v := &vaultRunner{r: sr, project: proj, backend: tc.backend}
			out, err := v.Run(context.Background(), releaseJob(t))
			if (err != nil) != tc.wantErr || (tc.wantErr && !errors.Is(err, runner.ErrEngine)) {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if out.TimedOut != tc.timedOut || !strings.Contains(out.Logs, tc.logHas) {
				t.Errorf("outcome = %+v, want timed out %v and a log with %q", out, tc.timedOut, tc.logHas)
			}
		})
	}
}

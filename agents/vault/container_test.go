package vault

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/release"
	"github.com/disinto/disinto/lib/runner"
	"github.com/disinto/disinto/lib/tomlpos"
	vaultlib "github.com/disinto/disinto/lib/vault"
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

func releaseJob(t *testing.T) vaultlib.Job {
	t.Helper()
	text := []byte(publishFormula)
	return vaultlib.Job{
		Action: vaultlib.Action{ID: "release-v1-2-0", Formula: "publish-notes", Secrets: []string{"MIRROR_TOKEN"},
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
	v := NewContainerRunner(ContainerOptions{Runner: sr, Network: "disinto_net",
		Project: &config.Project{Name: "widgets", Repo: "acme/widgets", ForgeURL: "http://forge:3000", PrimaryBranch: "main"},
		Backend: config.Backend{APIKey: "sk-model-key-123456", BaseURL: "http://model:1", Model: "claude-x"}})
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
			v := NewContainerRunner(ContainerOptions{Runner: sr, Project: proj, Backend: tc.backend})
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

// releaseVaultJob is the dispatcher's job of an approved release.
func releaseVaultJob(t *testing.T) vaultlib.Job {
	t.Helper()
	a, err := release.Request{Project: "widgets", Version: "v1.2.0", SHA: strings.Repeat("c", 40), Mirrors: []string{"github"}}.Action()
	if err != nil {
		t.Fatal(err)
	}
	return vaultlib.Job{Action: a, Timeout: 5 * time.Minute, OpsCommit: "abc123",
		Secrets: map[string]string{"RELEASE_TOKEN": "release-token-value", "MIRROR_GITHUB_TOKEN": "mirror-token-value"}}
}

// resultLine is the job's report of the release of releaseVaultJob.
func resultLine(status, tag, mirror string) string {
	return release.ResultMarker + `{"version":"v1.2.0","sha":"` + strings.Repeat("c", 40) + `","tag":"` + tag +
		`","mirrors":{"github":"` + mirror + `"},"status":"` + status + `","reason":"x"}` + "\n"
}

// A release runs as the mechanical job, with the action's secrets and no
// model credential; its result line decides the outcome and becomes the
// recorded report.
func TestReleaseRun(t *testing.T) {
	proj := &config.Project{Name: "widgets", Repo: "acme/widgets", ForgeURL: "http://forgejo:3000", PrimaryBranch: "main",
		Mirrors: map[string]string{"github": "https://github.com/acme/widgets.git"}}
	started := time.Now()
	for _, tc := range []struct {
		name     string
		out      runner.Outcome
		err      error
		exit     int
		report   string
		logHas   string
		timedOut bool
	}{
		{"released", runner.Outcome{ExitCode: 0, Started: started, Log: "tag\n" + resultLine("released", "created", "ok")}, nil, 0, `"status":"released"`, "", false},
		{"partial", runner.Outcome{ExitCode: 0, Started: started, Log: resultLine("partial", "existing", "failed: rejected")}, nil, 0, `"status":"partial"`, "", false},
		{"failed", runner.Outcome{ExitCode: 1, Started: started, Log: resultLine("failed", "", "skipped")}, nil, 1, `"status":"failed"`, "", false},
		{"failed but exit 0", runner.Outcome{ExitCode: 0, Started: started, Log: resultLine("failed", "", "skipped")}, nil, 1, `"status":"failed"`, "", false},
		{"no result", runner.Outcome{ExitCode: 0, Started: started, Log: "tag created\n"}, nil, 1, "", "printed no", false},
		{"result of another release", runner.Outcome{ExitCode: 0, Started: started, Log: strings.ReplaceAll(resultLine("released", "created", "ok"), "v1.2.0", "v9.9.9")}, nil, 1, "", "version", false},
		{"timed out", runner.Outcome{ExitCode: 137, Started: started, Log: "tag"}, runner.ErrTimeout, 137, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sr := &scriptedRunner{out: tc.out, err: tc.err}
			v := NewContainerRunner(ContainerOptions{Runner: sr, Project: proj, Network: "disinto_net", Backend: config.Backend{APIKey: "sk-model-key-123456"}})
			out, err := v.Run(context.Background(), releaseVaultJob(t))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if out.ExitCode != tc.exit || out.TimedOut != tc.timedOut || !strings.Contains(out.Report, tc.report) ||
				(tc.report == "" && out.Report != "") || !strings.Contains(out.Logs, tc.logHas) {
				t.Errorf("outcome %+v; want exit %d, report with %q, log with %q", out, tc.exit, tc.report, tc.logHas)
			}
			j := sr.jobs[0]
			if j.Kind != runner.Mechanical || j.Network != "disinto_net" || j.Timeout != 5*time.Minute || len(j.Secrets) != 2 ||
				j.Secrets["RELEASE_TOKEN"] != "release-token-value" || j.Env["RELEASE_SHA"] != strings.Repeat("c", 40) ||
				j.Env["RELEASE_MIRROR_0_SECRET"] != "MIRROR_GITHUB_TOKEN" {
				t.Errorf("job %+v", j)
			}
			if strings.Contains(j.Script, "release-token-value") || strings.Contains(strings.Join(mapValues(j.Env), " "), "token-value") {
				t.Error("a secret value is in the job's script or environment")
			}
		})
	}
}

// A release action the plan refuses (no release token declared) is an
// outcome, not a retry: nothing ran and nothing will.
func TestReleaseRunRefused(t *testing.T) {
	sr := &scriptedRunner{}
	v := NewContainerRunner(ContainerOptions{Runner: sr, Project: &config.Project{Name: "widgets", Repo: "acme/widgets", ForgeURL: "http://forgejo:3000"}})
	job := releaseVaultJob(t)
	job.Action.Secrets = nil
	out, err := v.Run(context.Background(), job)
	if err != nil || out.ExitCode != -1 || !strings.Contains(out.Logs, "RELEASE_TOKEN") || len(sr.jobs) != 0 {
		t.Errorf("Run = %+v, %v, %d jobs; want a refusal naming RELEASE_TOKEN and no job", out, err, len(sr.jobs))
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// A release the job reports is confirmed on the forge: a tag missing or
// on another commit fails the run whatever the job said; a forge that
// does not answer decides nothing.
func TestReleaseRunConfirmsOnTheForge(t *testing.T) {
	sha := strings.Repeat("c", 40)
	proj := &config.Project{Name: "widgets", Repo: "acme/widgets", ForgeURL: "http://forgejo:3000",
		Mirrors: map[string]string{"github": "https://github.com/acme/widgets.git"}}
	for _, tc := range []struct {
		name   string
		tag    forge.Tag
		err    error
		exit   int
		logHas string
	}{
		{"confirmed", forge.Tag{Name: "v1.2.0", SHA: sha}, nil, 0, "confirmed on the forge"},
		{"elsewhere", forge.Tag{Name: "v1.2.0", SHA: strings.Repeat("e", 40)}, nil, 1, "not " + sha},
		{"missing", forge.Tag{}, forge.ErrNotFound, 1, "has no tag"},
		{"forge down", forge.Tag{}, forge.ErrUnavailable, 0, "not confirmed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sr := &scriptedRunner{out: runner.Outcome{ExitCode: 0, Started: time.Now(), Log: resultLine("released", "created", "ok")}}
			var asked string
			v := NewContainerRunner(ContainerOptions{Runner: sr, Project: proj, Tags: func(_ context.Context, name string) (forge.Tag, error) {
				asked = name
				return tc.tag, tc.err
			}})
			out, err := v.Run(context.Background(), releaseVaultJob(t))
			if err != nil || out.ExitCode != tc.exit || !strings.Contains(out.Logs, tc.logHas) || asked != "v1.2.0" {
				t.Errorf("outcome %+v, %v (asked %q); want exit %d and a log with %q", out, err, asked, tc.exit, tc.logHas)
			}
		})
	}
}

// The validator and the runner agree on the variables: an action with
// exactly the values the validator demands (none for what the runner
// fills) renders every shipped formula, and one with fewer is refused
// before it is ever filed.
func TestRunnerFillsWhatTheValidatorLeaves(t *testing.T) {
	names, err := fs.Glob(formulas.FS, "*.toml")
	if err != nil {
		t.Fatal(err)
	}
	v := NewContainerRunner(ContainerOptions{Project: &config.Project{Name: "widgets", Repo: "acme/widgets",
		ForgeURL: "http://forge:3000", PrimaryBranch: "main"}})
	val := vaultlib.Validator{Formulas: formulas.FS}
	for _, n := range names {
		name := strings.TrimSuffix(n, ".toml")
		t.Run(name, func(t *testing.T) {
			src := "id = \"a\"\nformula = \"" + name + "\"\ncontext = \"c\"\nsecrets = []\n"
			vars := map[string]string{}
			_, err := val.Parse("vault/actions/a.toml", []byte(src))
			var ps tomlpos.Problems
			if err != nil && !errors.As(err, &ps) {
				t.Fatal(err)
			}
			for _, p := range ps {
				if !errors.Is(p, vaultlib.ErrMissingVar) || p.Line != 2 {
					t.Fatalf("want only missing variables at the formula's line, got %v", p)
				}
				vars[strings.TrimPrefix(p.Key, "vars.")] = "1"
			}
			text, err := fs.ReadFile(formulas.FS, n)
			if err != nil {
				t.Fatal(err)
			}
			a := vaultlib.Action{ID: "a", Formula: name, Vars: vars}
			prompt, err := v.prompt(vaultlib.Job{Action: a, Formula: text})
			if err != nil {
				t.Fatalf("the validator accepts %v, the runner does not render it: %v", vars, err)
			}
			if strings.Contains(prompt, "{{") {
				t.Errorf("unrendered placeholder in the prompt of %s", name)
			}
		})
	}
}

// The prompt states the approval as it was: tier, the administrator who
// approved or that no human did, and the ops commit; never "an
// administrator approved" for an action no human saw.
func TestPromptStatesTheApproval(t *testing.T) {
	v := NewContainerRunner(ContainerOptions{Project: &config.Project{Name: "widgets", Repo: "acme/widgets", PrimaryBranch: "main"}})
	low := releaseJob(t)
	low.Tier, low.OpsCommit = vaultlib.TierLow, "0f1e2d3c"
	high := releaseJob(t)
	high.Tier, high.Approver, high.Approval = vaultlib.TierHigh, "alice", "pull request #7 approved by alice at 1234567, merged"
	for _, tc := range []struct {
		name string
		job  vaultlib.Job
		want []string
		not  string
	}{
		{"low tier, no human", low, []string{"low tier; approved by no human: low tier by policy", "ops commit 0f1e2d3c"}, "administrator"},
		{"high tier, an administrator", high, []string{"high tier; approved by the administrator alice (pull request #7", "ops commit abc123"}, "no human"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := v.prompt(tc.job)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(p, "\n")
			for _, w := range tc.want {
				if !strings.Contains(first, w) {
					t.Errorf("the prompt's first line lacks %q: %s", w, first)
				}
			}
			if strings.Contains(first, tc.not) {
				t.Errorf("the prompt's first line says %q: %s", tc.not, first)
			}
		})
	}
}

package main

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/release"
	"github.com/disinto/disinto/lib/runner"
	"github.com/disinto/disinto/lib/vault"
)

// A release is asked for with one semver version; anything else is a
// usage error (exit 2), refused before any configuration is read.
func TestReleaseUsage(t *testing.T) {
	for _, args := range [][]string{
		{"release"},
		{"release", "v1.2"},
		{"release", "1.2.0"},
		{"release", "v1.2.0-rc1"},
		{"release", "v1.2.0", "v1.3.0"},
	} {
		code, out, errOut := runCLI(t, nil, append(args, "--projects-dir", t.TempDir())...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "v1.2.0") {
			t.Errorf("disinto %v: exit %d, stdout %q, stderr %q; want 2 with the version's form", args, code, out, errOut)
		}
	}
}

// tagForge is a project repository with one branch head and some tags.
type tagForge struct {
	head string
	tags map[string]string
	err  error
}

func (f tagForge) GetBranch(_ context.Context, name string) (forge.Branch, error) {
	if f.err != nil {
		return forge.Branch{}, f.err
	}
	return forge.Branch{Name: name, SHA: f.head}, nil
}

func (f tagForge) GetTag(_ context.Context, name string) (forge.Tag, error) {
	if sha, ok := f.tags[name]; ok {
		return forge.Tag{Name: name, SHA: sha}, nil
	}
	return forge.Tag{}, forge.ErrNotFound
}

// The commit released is the primary branch's head, or the one asked
// for; a tag of the version on another commit refuses the release.
func TestReleaseCommit(t *testing.T) {
	head, other := strings.Repeat("a", 40), strings.Repeat("b", 40)
	for _, tc := range []struct {
		name string
		f    tagForge
		want string
		got  string
		err  error
	}{
		{"head", tagForge{head: head}, "", head, nil},
		{"asked for", tagForge{head: head}, other, other, nil},
		{"tag on the head: a release again", tagForge{head: head, tags: map[string]string{"v1.2.0": head}}, "", head, nil},
		{"tag elsewhere", tagForge{head: head, tags: map[string]string{"v1.2.0": other}}, "", "", release.ErrTagElsewhere},
		{"forge down", tagForge{err: forge.ErrUnavailable}, "", "", forge.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := releaseCommit(context.Background(), tc.f, "acme/widgets", "main", "v1.2.0", tc.want)
			if got != tc.got || !errors.Is(err, tc.err) {
				t.Errorf("releaseCommit = %q, %v; want %q, %v", got, err, tc.got, tc.err)
			}
		})
	}
}

// releaseVaultJob is the dispatcher's job of an approved release.
func releaseVaultJob(t *testing.T) vault.Job {
	t.Helper()
	a, err := release.Request{Project: "widgets", Version: "v1.2.0", SHA: strings.Repeat("c", 40), Mirrors: []string{"github"}}.Action()
	if err != nil {
		t.Fatal(err)
	}
	return vault.Job{Action: a, Timeout: 5 * time.Minute, OpsCommit: "abc123",
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
			v := &vaultRunner{r: sr, project: proj, network: "disinto_net", backend: config.Backend{APIKey: "sk-model-key-123456"}}
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
	v := &vaultRunner{r: sr, project: &config.Project{Name: "widgets", Repo: "acme/widgets", ForgeURL: "http://forgejo:3000"}}
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

// opsFiles is an ops primary branch of a few files.
type opsFiles map[string]string

func (o opsFiles) Read(_ context.Context, path string) ([]byte, error) {
	if s, ok := o[path]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

// resultFile is a result record of status, with the release's report.
func resultFile(t *testing.T, id string, status vault.Status, report string) string {
	t.Helper()
	data, err := vault.Result{ID: id, Status: status, Report: report}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// --retry files the first attempt without a result, for the commit of
// the attempt before it, and refuses a release that completed.
func TestReleaseAttempt(t *testing.T) {
	const base = "release-widgets-v1-2-0"
	old := strings.Repeat("d", 40)
	action := func(id string) (string, string) {
		return vault.ActionPath(id), "id = \"" + id + "\"\n[vars]\nsha = \"" + old + "\"\n"
	}
	withAction := func(o opsFiles, id string) opsFiles {
		p, c := action(id)
		o[p] = c
		return o
	}
	for _, tc := range []struct {
		name    string
		ops     opsFiles
		attempt int
		sha     string
		err     bool
	}{
		{"nothing filed", opsFiles{}, 1, "", false},
		{"first waits for approval", withAction(opsFiles{}, base), 1, "", false},
		{"first failed", withAction(opsFiles{vault.ResultPath(base): resultFile(t, base, vault.StatusFailed, "")}, base), 2, old, false},
		{"first left started", withAction(opsFiles{vault.ResultPath(base): resultFile(t, base, vault.StatusStarted, "")}, base), 2, old, false},
		{"first partial, second timed out", withAction(withAction(opsFiles{
			vault.ResultPath(base):         resultFile(t, base, vault.StatusSucceeded, `{"status":"partial"}`),
			vault.ResultPath(base + "-r2"): resultFile(t, base+"-r2", vault.StatusTimeout, ""),
		}, base), base+"-r2"), 3, old, false},
		{"released", withAction(opsFiles{vault.ResultPath(base): resultFile(t, base, vault.StatusSucceeded, `{"status":"released"}`)}, base), 0, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, sha, err := releaseAttempt(context.Background(), tc.ops, base)
			if n != tc.attempt || sha != tc.sha || (err != nil) != tc.err {
				t.Errorf("releaseAttempt = %d, %q, %v; want %d, %q, error %v", n, sha, err, tc.attempt, tc.sha, tc.err)
			}
		})
	}
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
			v := &vaultRunner{r: sr, project: proj, tags: func(_ context.Context, name string) (forge.Tag, error) {
				asked = name
				return tc.tag, tc.err
			}}
			out, err := v.Run(context.Background(), releaseVaultJob(t))
			if err != nil || out.ExitCode != tc.exit || !strings.Contains(out.Logs, tc.logHas) || asked != "v1.2.0" {
				t.Errorf("outcome %+v, %v (asked %q); want exit %d and a log with %q", out, err, asked, tc.exit, tc.logHas)
			}
		})
	}
}

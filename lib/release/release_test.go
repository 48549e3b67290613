package release_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/release"
	"github.com/disinto/disinto/lib/vault"
)

// shipped are the formulas the runner executes, read from disk (the
// formulas package is imported by cmd only).
var shipped = os.DirFS("../../formulas")

const sha = "0123456789abcdef0123456789abcdef01234567"

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"v1.2.0", true}, {"v0.0.1", true}, {"v10.20.30", true},
		{"v1.2", false}, {"1.2.0", false}, {"v1.2.0-rc1", false}, {"v01.2.0", false},
		{"v1.2.0\n", false}, {"", false}, {"v1.2.0 ", false}, {"V1.2.0", false},
	} {
		_, err := release.ParseVersion(tc.in)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, release.ErrBadVersion)) {
			t.Errorf("ParseVersion(%q) = %v, want ok %v", tc.in, err, tc.ok)
		}
	}
}

// Ids are unambiguous (spec 70 §7.5.3): v1.20.0 and v12.0.0 differ.
func TestActionID(t *testing.T) {
	for _, tc := range []struct {
		project, version, want string
		err                    error
	}{
		{"widgets", "v1.2.0", "release-widgets-v1-2-0", nil},
		{"widgets", "v1.20.0", "release-widgets-v1-20-0", nil},
		{"widgets", "v12.0.0", "release-widgets-v12-0-0", nil},
		{"My_App.web", "v1.0.0", "release-my-app-web-v1-0-0", nil},
		{"widgets", "v1.2", "", release.ErrBadVersion},
		{strings.Repeat("p", 60), "v1.0.0", "", release.ErrBadProject},
	} {
		got, err := release.ActionID(tc.project, tc.version)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("ActionID(%q, %q) = %q, %v; want %q, %v", tc.project, tc.version, got, err, tc.want, tc.err)
		}
	}
	if release.MirrorSecret("code-berg.org") != "MIRROR_CODE_BERG_ORG_TOKEN" {
		t.Errorf("MirrorSecret = %s", release.MirrorSecret("code-berg.org"))
	}
}

// The requested action is one the vault's validator accepts, high tier
// under the default policy, with the commit, version and secrets.
func TestRequestActionValidates(t *testing.T) {
	a, err := release.Request{Project: "widgets", Version: "v1.2.0", SHA: sha, Mirrors: []string{"github"}}.Action()
	if err != nil {
		t.Fatal(err)
	}
	data, err := vault.Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	pol := vault.DefaultPolicy()
	pol.Secrets = append(pol.Secrets, "MIRROR_GITHUB_TOKEN")
	got, err := vault.Validator{Formulas: shipped, Policy: pol}.Parse(vault.ActionPath(a.ID), data)
	if err != nil {
		t.Fatalf("the validator refuses the release action: %v\n%s", err, data)
	}
	if got.ID != "release-widgets-v1-2-0" || got.Vars["sha"] != sha || got.Vars["version"] != "v1.2.0" ||
		strings.Join(got.Secrets, " ") != "RELEASE_TOKEN MIRROR_GITHUB_TOKEN" || pol.Classify(got) != vault.TierHigh {
		t.Errorf("action %+v", got)
	}
	if !strings.Contains(got.Context, sha) {
		t.Errorf("the context does not name the commit: %q", got.Context)
	}
	if _, err := (release.Request{Project: "widgets", Version: "v1.2.0", SHA: "main"}).Action(); err == nil {
		t.Error("a branch name was taken for a commit")
	}
}

func releaseAction(t *testing.T, mirrors ...string) vault.Action {
	t.Helper()
	a, err := release.Request{Project: "widgets", Version: "v1.2.0", SHA: sha, Mirrors: mirrors}.Action()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A mirror is pushed with its declared token over http(s); any other is
// skipped. The plan carries no secret and refuses what it cannot run.
func TestPlan(t *testing.T) {
	target := release.Target{ForgeURL: "http://forgejo:3000/", Repo: "acme/widgets", Mirrors: map[string]string{
		"github": "https://github.com/acme/widgets.git", "codeberg": "https://codeberg.org/acme/widgets.git",
		"ssh": "git@example.com:acme/widgets.git"}}
	j, err := release.Plan(releaseAction(t, "github", "ssh"), target)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"RELEASE_FORGE_URL": "http://forgejo:3000", "RELEASE_REPO": "acme/widgets", "RELEASE_VERSION": "v1.2.0",
		"RELEASE_SHA": sha, "RELEASE_MIRROR_COUNT": "3",
		"RELEASE_MIRROR_0_NAME": "codeberg", "RELEASE_MIRROR_0_SECRET": "",
		"RELEASE_MIRROR_1_NAME": "github", "RELEASE_MIRROR_1_SECRET": "MIRROR_GITHUB_TOKEN",
		"RELEASE_MIRROR_2_NAME": "ssh", "RELEASE_MIRROR_2_SECRET": "",
	}
	for k, v := range want {
		if j.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, j.Env[k], v)
		}
	}
	if strings.Join(j.Mirrors, " ") != "codeberg github ssh" || j.Script != "exec "+release.JobCommand {
		t.Errorf("job mirrors %v", j.Mirrors)
	}
	for name, tc := range map[string]struct {
		a vault.Action
		t release.Target
	}{
		"other formula": {func() vault.Action { a := releaseAction(t); a.Formula = "dev"; return a }(), target},
		"bad version": {func() vault.Action {
			a := releaseAction(t)
			a.Vars = map[string]string{"version": "v1", "sha": sha}
			return a
		}(), target},
		"no token":     {func() vault.Action { a := releaseAction(t); a.Secrets = nil; return a }(), target},
		"bad forge":    {releaseAction(t), release.Target{ForgeURL: "ftp://x", Repo: "acme/widgets"}},
		"token in URL": {releaseAction(t), release.Target{ForgeURL: "http://bot:tok@forgejo:3000", Repo: "acme/widgets"}},
		"bad repo":     {releaseAction(t), release.Target{ForgeURL: "http://forgejo:3000", Repo: "acme"}},
	} {
		if _, err := release.Plan(tc.a, tc.t); err == nil {
			t.Errorf("%s: planned", name)
		}
	}
}

func TestParseResult(t *testing.T) {
	j := release.Job{Version: "v1.2.0", SHA: sha, Mirrors: []string{"github"}}
	line := func(s string) string { return "release v1.2.0\nnoise\n" + release.ResultMarker + s + "\n" }
	const (
		released = `{"version":"v1.2.0","sha":"` + sha + `","tag":"created","mirrors":{"github":"ok"},"status":"released","reason":""}`
		partial  = `{"version":"v1.2.0","sha":"` + sha + `","tag":"existing","mirrors":{"github":"failed: rejected"},"status":"partial","reason":"a mirror push failed"}`
		failed   = `{"version":"v1.2.0","sha":"` + sha + `","tag":"","mirrors":{},"status":"failed","reason":"the tag v1.2.0 exists at abc"}`
	)
	for _, tc := range []struct {
		name, log string
		ok        bool
		status    string
	}{
		{"released", line(released), true, release.StatusReleased},
		{"partial", line(partial), true, release.StatusPartial},
		{"failed", line(failed), true, release.StatusFailed},
		{"last line wins", line(failed) + line(released), true, release.StatusReleased},
		{"no line", "release v1.2.0\n", false, ""},
		{"not JSON", line("{oops"), false, ""},
		{"unknown field", line(strings.Replace(released, `"reason"`, `"extra":1,"reason"`, 1)), false, ""},
		{"other version", line(strings.Replace(released, "v1.2.0", "v1.3.0", 1)), false, ""},
		{"other commit", line(strings.Replace(released, sha, strings.Repeat("f", 40), 1)), false, ""},
		{"released untagged", line(strings.Replace(released, `"created"`, `""`, 1)), false, ""},
		{"released with a failed mirror", line(strings.Replace(released, `"ok"`, `"failed: x"`, 1)), false, ""},
		{"partial without a failure", line(strings.Replace(partial, `"failed: rejected"`, `"ok"`, 1)), false, ""},
		{"a mirror missing", line(strings.Replace(released, `"github":"ok"`, ``, 1)), false, ""},
		{"another mirror", line(strings.Replace(released, `"github"`, `"gitlab"`, 1)), false, ""},
		{"unknown status", line(strings.Replace(released, `"released"`, `"done"`, 1)), false, ""},
		{"failed without reason", line(strings.Replace(failed, `"the tag v1.2.0 exists at abc"`, `""`, 1)), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := release.ParseResult(tc.log, j)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, release.ErrBadResult)) {
				t.Fatalf("ParseResult = %+v, %v; want ok %v", r, err, tc.ok)
			}
			if tc.ok && r.Status != tc.status {
				t.Errorf("status %s, want %s", r.Status, tc.status)
			}
		})
	}
}

// A later attempt of a release is an action of its own.
func TestAttempts(t *testing.T) {
	if release.AttemptID("release-w-v1-0-0", 1) != "release-w-v1-0-0" || release.AttemptID("release-w-v1-0-0", 3) != "release-w-v1-0-0-r3" {
		t.Error("attempt ids")
	}
	a, err := release.Request{Project: "widgets", Version: "v1.2.0", SHA: sha, Attempt: 2}.Action()
	if err != nil || a.ID != "release-widgets-v1-2-0-r2" {
		t.Errorf("attempt 2: %q %v", a.ID, err)
	}
	if _, err := (release.Request{Project: "widgets", Version: "v1.2.0", SHA: sha, Attempt: release.MaxAttempts + 1}).Action(); err == nil {
		t.Error("too many attempts")
	}
}

package main

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/release"
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

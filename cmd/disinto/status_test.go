package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/ledger"
)

// status --json gives lists as [] and durations in seconds, and the table
// of recent runs has a header.
func TestStatusJSONListsAndSeconds(t *testing.T) {
	rec := ledger.Record{End: time.Now(), Project: "alpha", Role: "dev", Issue: 7, Reason: ledger.ReasonMerged,
		Wall: 90 * time.Second, Stages: []ledger.StageTime{{Name: "pr_to_ci", Wall: 1500 * time.Millisecond}}}
	rep := daemon.Report{Recent: []ledger.Record{rec}}
	var out bytes.Buffer
	if err := writeStatusJSON(&out, rep); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, out.String())
	}
	for _, k := range []string{"jobs", "running", "paused", "disabled", "failing", "in_flight"} {
		if l, ok := got[k].([]any); !ok || len(l) != 0 {
			t.Errorf("%s = %#v, want []", k, got[k])
		}
	}
	if strings.Contains(out.String(), "null") || strings.Contains(out.String(), "_ns") {
		t.Errorf("status JSON holds a null or a nanosecond field:\n%s", out.String())
	}
	r := got["recent"].([]any)[0].(map[string]any)
	if r["wall_seconds"] != 90.0 {
		t.Errorf("wall_seconds = %v, want 90", r["wall_seconds"])
	}
	if s := r["stages"].([]any)[0].(map[string]any); s["wall_seconds"] != 1.5 {
		t.Errorf("stage wall_seconds = %v, want 1.5", s["wall_seconds"])
	}
	var table bytes.Buffer
	rep.WriteText(&table, false)
	if !strings.Contains(table.String(), "ENDED") || !strings.Contains(table.String(), "OUTCOME") {
		t.Errorf("recent runs without a header:\n%s", table.String())
	}
}

// statusDirs writes a valid project file, no env file, and a data dir
// whose daemon.json names addr as the status listener ("" for none); it
// returns the flags of a status run on them.
func statusDirs(t *testing.T, addr string) []string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "projects", "example.toml"), "name = \"example\"\nrepo = \"acme/example\"\n")
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if addr != "" {
		info, _ := json.Marshal(daemon.Info{PID: 1, Listen: "127.0.0.1:1", Status: addr, Started: time.Now()})
		writeFile(t, filepath.Join(data, "daemon.json"), string(info))
	}
	return []string{"--projects-dir", filepath.Join(dir, "projects"), "--env-file", filepath.Join(dir, "none"), "--data-dir", data}
}

// TestStatusDaemonRefuses: a daemon that runs but refuses /status is not
// "not running": status says it runs and refused, names the token when
// the refusal is about it, and fails.
func TestStatusDaemonRefuses(t *testing.T) {
	tests := []struct {
		name  string
		code  int
		token string
		want  []string
	}{
		{"no token", http.StatusUnauthorized, "", []string{"daemon runs", "401", "DISINTO_STATUS_TOKEN is not set"}},
		{"wrong token", http.StatusUnauthorized, "not-the-daemons-token", []string{"daemon runs", "401", "DISINTO_STATUS_TOKEN is not the daemon's"}},
		{"forbidden", http.StatusForbidden, "x", []string{"daemon runs", "403", "DISINTO_STATUS_TOKEN"}},
		{"broken", http.StatusInternalServerError, "", []string{"daemon runs", "500"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "no", tt.code)
			}))
			t.Cleanup(srv.Close)
			var env []string
			if tt.token != "" {
				env = []string{"DISINTO_STATUS_TOKEN=" + tt.token}
			}
			code, out, errOut := runCLI(t, env, append([]string{"status"}, statusDirs(t, srv.Listener.Addr().String())...)...)
			if code != exitFailure || strings.Contains(out, "not running") {
				t.Fatalf("code %d, stdout:\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q: %s", w, errOut)
				}
			}
			if n := strings.Count(strings.TrimSpace(errOut), "\n"); n != 0 {
				t.Errorf("stderr has %d lines, want one: %s", n+1, errOut)
			}
		})
	}

	// A daemon.json left behind by a daemon that is gone: the offline view.
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	code, out, errOut := runCLI(t, nil, append([]string{"status"}, statusDirs(t, addr)...)...)
	if code != exitOK || !strings.Contains(out, "daemon: not running") {
		t.Fatalf("stale daemon.json: code %d\n%s\n%s", code, out, errOut)
	}
}

// TestStatusURLFails: status --url with a URL it cannot use, or at which
// no daemon answers, fails with one line naming it, and never falls back
// to the local data dir.
func TestStatusURLFails(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	gone := srv.URL
	srv.Close()
	for _, tc := range []struct{ url, says string }{
		{"ftp://agents.example.org", `status URL "ftp://agents.example.org"`},
		{"http://user:pw@agents.example.org", "with no credentials"},
		{gone, "does not answer /status"},
	} {
		code, out, errOut := runCLI(t, nil, append([]string{"status", "--url", tc.url}, statusDirs(t, "")...)...)
		if code != exitFailure || out != "" || !strings.Contains(errOut, tc.says) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("status --url %s: code %d, stdout %q, stderr %q; want one line saying %q", tc.url, code, out, errOut, tc.says)
		}
		if strings.Contains(errOut, "pw@") {
			t.Errorf("status --url %s: the error shows the URL's password: %s", tc.url, errOut)
		}
	}
}

// TestStatusWithoutConfigFails: with no daemon, status in a directory
// without project files, or with a broken one, fails with one line
// instead of printing empty tables.
func TestStatusWithoutConfigFails(t *testing.T) {
	dir := t.TempDir()
	empty := []string{"--projects-dir", filepath.Join(dir, "projects"), "--env-file", filepath.Join(dir, "none"), "--data-dir", filepath.Join(dir, "data")}
	code, out, errOut := runCLI(t, nil, append([]string{"status"}, empty...)...)
	if code != exitFailure || out != "" || !strings.Contains(errOut, filepath.Join(dir, "projects")) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("empty directory: code %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	writeFile(t, filepath.Join(dir, "projects", "bad.toml"), "name = \"bad\"\nrepo = \"acme/bad\"\n[roles.dev]\nenabled = \"yes\"\ntimezone = \"Mars/Olympus\"\n")
	code, out, errOut = runCLI(t, nil, append([]string{"status", "--json"}, empty...)...)
	if code != exitFailure || out != "" || !strings.Contains(errOut, "bad.toml") || !strings.Contains(errOut, "config check") ||
		strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("broken config: code %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

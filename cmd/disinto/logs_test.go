package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeLogLines(t *testing.T, path string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := from; i < to; i++ {
		fmt.Fprintf(f, `{"level":"info","agent":"dev","time":"2026-01-01T00:00:%02dZ","message":"line-%d"}`+"\n", i, i)
	}
}

// The follower must print every line exactly once when the log file is
// rotated between two scans (renamed to a backup that still matches
// *.log, a fresh file started under the old name).
func TestLogTailFollowsAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	cur := filepath.Join(dir, "dev.log")
	writeLogLines(t, cur, 0, 3)
	var out bytes.Buffer
	tl := &logTail{dir: dir, out: &out}
	if err := tl.scan(); err != nil {
		t.Fatal(err)
	}
	// More lines land in the old file, then it is rotated the way
	// lumberjack does it, and the new file grows past the old offset.
	writeLogLines(t, cur, 3, 5)
	if err := os.Rename(cur, filepath.Join(dir, "dev-2026-01-01T00-00-05.000.log")); err != nil {
		t.Fatal(err)
	}
	writeLogLines(t, cur, 5, 12)
	if err := tl.scan(); err != nil {
		t.Fatal(err)
	}
	writeLogLines(t, cur, 12, 13)
	if err := tl.scan(); err != nil {
		t.Fatal(err)
	}
	for i := range 13 {
		if n := strings.Count(out.String(), fmt.Sprintf("line-%d\n", i)); n != 1 {
			t.Errorf("line-%d printed %d times; output:\n%s", i, n, out.String())
		}
	}
}

// A file listed by one scan may be renamed or pruned by rotation before
// it is opened; following must go on.
func TestLogTailFileGoneBetweenListAndOpen(t *testing.T) {
	dir := t.TempDir()
	tl := &logTail{dir: dir, out: &bytes.Buffer{}}
	got, err := tl.read(filepath.Join(dir, "dev.log"), nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("read of a vanished file = %v, %v; want nothing and no error", got, err)
	}
}

// logsFixture writes a log dir with lines of two agents, three levels and
// two runs, and returns the data dir.
func logsFixture(t *testing.T) string {
	t.Helper()
	data := t.TempDir()
	lines := []string{
		`{"level":"debug","agent":"dev","run":"r1","time":"2026-01-01T00:00:01.250Z","message":"poll"}`,
		`{"level":"info","agent":"dev","run":"r1","project":"widgets","time":"2026-01-01T00:00:02.500Z","message":"claimed"}`,
		`{"level":"warn","agent":"review","run":"r2","time":"2026-01-01T00:00:03Z","message":"slow forge"}`,
		`{"level":"error","agent":"dev","run":"r3","time":"2026-01-01T00:00:04.001Z","message":"push failed"}`,
	}
	writeFile(t, filepath.Join(data, "logs", "all.log"), strings.Join(lines, "\n")+"\n")
	return data
}

func TestLogsFilters(t *testing.T) {
	data := logsFixture(t)
	env := []string{"TZ=UTC"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"poll", "claimed", "slow forge", "push failed"}},
		{[]string{"--tail", "2"}, []string{"slow forge", "push failed"}},
		{[]string{"--tail", "0"}, nil},
		{[]string{"--level", "warn"}, []string{"slow forge", "push failed"}},
		{[]string{"--level", "info", "--agent", "dev"}, []string{"claimed", "push failed"}},
		{[]string{"--run", "r1"}, []string{"poll", "claimed"}},
		{[]string{"--run", "r1", "--tail", "1"}, []string{"claimed"}},
	} {
		code, out, errOut := runCLI(t, env, append([]string{"logs", "--data-dir", data}, tc.args...)...)
		if code != exitOK {
			t.Fatalf("logs %v: exit %d: %s", tc.args, code, errOut)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l == "" {
				continue
			}
			_, rest, _ := strings.Cut(l, "] ")
			msg, _, _ := strings.Cut(rest, " run=")
			got = append(got, strings.TrimSpace(strings.Split(msg, " project=")[0]))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("logs %v printed %q, want %q\n%s", tc.args, got, tc.want, out)
		}
	}
}

// Timestamps keep their milliseconds and carry the zone.
func TestLogsTimestampsInMilliseconds(t *testing.T) {
	got := formatLogLine(map[string]any{"time": "2026-01-01T00:00:02.5Z", "level": "info", "agent": "dev", "message": "m"})
	at := time.Date(2026, 1, 1, 0, 0, 2, 500e6, time.UTC).Local().Format("2006-01-02T15:04:05.000Z07:00")
	if !strings.HasPrefix(got, at+" INF [dev] m") {
		t.Errorf("formatted line %q, want a millisecond RFC 3339 time first", got)
	}
}

func TestLogsUsageErrors(t *testing.T) {
	data := logsFixture(t)
	for _, args := range [][]string{{"--level", "loud"}, {"--tail", "-5"}, {"--tail", "many"}} {
		code, _, errOut := runCLI(t, nil, append([]string{"logs", "--data-dir", data}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, args[0]) && !strings.Contains(errOut, "invalid argument") {
			t.Errorf("logs %v: exit %d, stderr %q; want a usage error naming the flag", args, code, errOut)
		}
	}
	if code, _, errOut := runCLI(t, nil, "logs", "--data-dir", t.TempDir()); code != exitFailure || !strings.Contains(errOut, "no logs in") {
		t.Errorf("logs of an empty data dir: exit %d, stderr %q", code, errOut)
	}
}

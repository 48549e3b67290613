package faults

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/disinto/disinto/lib/claude/claudetest"
)

// sessionUIDBase is where the suite's session uids begin, past the
// sandbox's default pool, which other suites on the machine use.
const sessionUIDBase = 400000

// roots are the directories of the suite's worlds: a process working
// under one of them belongs to the suite (other suites may run sessions
// on the same machine at the same time).
var roots struct {
	mu   sync.Mutex
	dirs []string
}

func addRoot(dir string) {
	roots.mu.Lock()
	defer roots.mu.Unlock()
	roots.dirs = append(roots.dirs, dir)
}

// leftovers lists the suite's live session processes and claude CLIs
// (under any of its worlds), as "pid uid cwd cmdline".
func leftovers() []string {
	roots.mu.Lock()
	dirs := append([]string(nil), roots.dirs...)
	roots.mu.Unlock()
	return procsUnder(dirs...)
}

// procsUnder lists the live processes working under any of dirs that run
// as a session uid or run the claude CLI.
func procsUnder(dirs ...string) []string {
	cli, _ := claudetest.CLIPath()
	ps, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, p := range ps {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || !under(cwd, dirs) {
			continue
		}
		uid, state := procStatus(p)
		if state == "Z" || state == "X" {
			continue
		}
		raw, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		isCLI := len(argv) > 0 && argv[0] != "" && (argv[0] == cli || filepath.Base(argv[0]) == "claude")
		if uid >= 200000 || isCLI {
			out = append(out, filepath.Base(p)+" uid="+strconv.Itoa(uid)+" "+cwd+" "+strings.Join(argv, " "))
		}
	}
	return out
}

func under(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// procStatus reads a process's real uid and state from /proc.
func procStatus(p string) (uid int, state string) {
	b, err := os.ReadFile(filepath.Join(p, "status"))
	if err != nil {
		return -1, "X"
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "Uid:":
			uid, _ = strconv.Atoi(f[1])
		case len(f) >= 2 && f[0] == "State:":
			state = f[1]
		}
	}
	return uid, state
}

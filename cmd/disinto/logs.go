package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/disinto/disinto/lib/logx"
)

type logsFlags struct {
	follow  bool
	agent   string
	project string
	run     string
	level   string
	tail    int
	since   time.Duration

	// min is the parsed level; lines below it are skipped.
	min zerolog.Level
}

func (a *app) logsCmd() *cobra.Command {
	f := logsFlags{tail: -1}
	cmd := &cobra.Command{
		Use:   "logs [-f] [--tail N] [--level L] [--agent A] [--project P] [--run ID] [--since D]",
		Short: "Pretty-print the JSON logs under <data>/logs",
		Long: "Prints the agents' JSON log lines in time order, with millisecond RFC 3339 timestamps.\n" +
			"--tail N prints only the last N matching lines (then, with -f, the new ones).",
		Example: "  disinto logs --tail 50 -f\n" +
			"  disinto logs --agent dev --project widgets --level warn --since 2h\n" +
			"  disinto logs --run widgets-dev-20261201T134913-41",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lvl, err := logx.ParseLevel(f.level)
			if err != nil {
				return usageError{fmt.Errorf("--level: %w", err)}
			}
			f.min = lvl
			if f.tail < -1 {
				return usageError{fmt.Errorf("--tail %d: want a number of lines, 0 or more", f.tail)}
			}
			dir := a.layout().Logs()
			if _, err := os.Stat(dir); err != nil {
				return fmt.Errorf("no logs in %s: %w", dir, err)
			}
			t := &logTail{dir: dir, f: f, out: a.stdout}
			if f.since > 0 {
				t.since = time.Now().Add(-f.since)
			}
			if err := t.scanTail(f.tail); err != nil {
				return err
			}
			if !f.follow {
				return nil
			}
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-cmd.Context().Done():
					return nil
				case <-tick.C:
					if err := t.scan(); err != nil {
						return err
					}
				}
			}
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.follow, "follow", "f", false, "keep printing new lines")
	fl.IntVarP(&f.tail, "tail", "n", -1, "print only the last N matching lines (default: all)")
	fl.StringVar(&f.level, "level", "debug", "only lines at this level or above (debug, info, warn, error)")
	fl.StringVar(&f.agent, "agent", "", "only this agent (dev, review, daemon, scheduler, webhook, ...)")
	fl.StringVar(&f.project, "project", "", "only this project")
	fl.StringVar(&f.run, "run", "", "only this run (the run id of the log lines and the ledger)")
	fl.DurationVar(&f.since, "since", 0, "only lines newer than this (e.g. 1h)")
	return cmd
}

type logLine struct {
	at     time.Time
	fields map[string]any
}

// logTail reads new lines of every log file and prints them in time order.
// Offsets belong to files, not names: a rotated file keeps its offset
// under its backup name, and a fresh file under the old name starts at 0.
type logTail struct {
	dir     string
	f       logsFlags
	since   time.Time
	out     io.Writer
	offsets []fileOffset
}

type fileOffset struct {
	fi  os.FileInfo
	off int64
}

// offsetIn returns the offset recorded for the file fi in prev, 0 for a
// file not seen before.
func offsetIn(prev []fileOffset, fi os.FileInfo) int64 {
	for _, o := range prev {
		if os.SameFile(o.fi, fi) {
			return o.off
		}
	}
	return 0
}

// scan prints every new matching line.
func (t *logTail) scan() error { return t.scanTail(-1) }

// scanTail prints the last n new matching lines (all when n < 0).
func (t *logTail) scanTail(n int) error {
	files, err := filepath.Glob(filepath.Join(t.dir, "*.log"))
	if err != nil {
		return fmt.Errorf("list logs: %w", err)
	}
	var lines []logLine
	// Files gone since the last scan (pruned backups) drop out.
	prev := t.offsets
	t.offsets = nil
	for _, path := range files {
		got, err := t.read(path, prev)
		if err != nil {
			return err
		}
		lines = append(lines, got...)
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
	if n >= 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for _, l := range lines {
		fmt.Fprintln(t.out, formatLogLine(l.fields))
	}
	return nil
}

func (t *logTail) read(path string, prev []fileOffset) ([]logLine, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		// Renamed or pruned by rotation since it was listed; a renamed
		// file is read under its new name at the next scan.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat log: %w", err)
	}
	off := offsetIn(prev, st)
	if st.Size() < off {
		off = 0 // truncated
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seek log: %w", err)
	}
	var out []logLine
	r := bufio.NewReader(f)
	for {
		raw, err := r.ReadBytes('\n')
		if err != nil {
			break // a partial last line is read again next time
		}
		off += int64(len(raw))
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		if !t.match(m) {
			continue
		}
		at, _ := time.Parse(time.RFC3339, str(m["time"]))
		if !t.since.IsZero() && at.Before(t.since) {
			continue
		}
		out = append(out, logLine{at: at, fields: m})
	}
	t.offsets = append(t.offsets, fileOffset{fi: st, off: off})
	return out, nil
}

func (t *logTail) match(m map[string]any) bool {
	if lvl, err := zerolog.ParseLevel(str(m["level"])); err == nil && lvl != zerolog.NoLevel && lvl < t.f.min {
		return false
	}
	return (t.f.agent == "" || str(m[logx.KeyAgent]) == t.f.agent) &&
		(t.f.project == "" || str(m[logx.KeyProject]) == t.f.project) &&
		(t.f.run == "" || str(m[logx.KeyRun]) == t.f.run)
}

// formatLogLine renders one JSON log line as "time LVL [agent] message k=v".
func formatLogLine(m map[string]any) string {
	var b strings.Builder
	at, err := time.Parse(time.RFC3339, str(m["time"]))
	if err == nil {
		b.WriteString(at.Local().Format(logx.TimeFormat))
	} else {
		b.WriteString(str(m["time"]))
	}
	lvl := map[string]string{"debug": "DBG", "info": "INF", "warn": "WRN", "error": "ERR", "fatal": "FTL"}[str(m["level"])]
	if lvl == "" {
		lvl = strings.ToUpper(str(m["level"]))
	}
	fmt.Fprintf(&b, " %-3s [%s] %s", lvl, str(m[logx.KeyAgent]), str(m["message"]))
	keys := make([]string, 0, len(m))
	for k := range m {
		switch k {
		case "time", "level", "message", logx.KeyAgent:
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := str(m[k])
		if strings.ContainsAny(v, " \t\n") {
			v = fmt.Sprintf("%q", v)
		}
		fmt.Fprintf(&b, " %s=%s", k, v)
	}
	return b.String()
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return fmt.Sprintf("%v", x)
	default:
		data, _ := json.Marshal(x)
		return string(data)
	}
}

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

	"github.com/spf13/cobra"

	"github.com/disinto/disinto/lib/logx"
)

type logsFlags struct {
	follow  bool
	agent   string
	project string
	since   time.Duration
}

func (a *app) logsCmd() *cobra.Command {
	var f logsFlags
	cmd := &cobra.Command{
		Use:   "logs [-f] [--agent A] [--project P] [--since D]",
		Short: "Pretty-print the JSON logs under <data>/logs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := filepath.Join(a.dataDir, "logs")
			if _, err := os.Stat(dir); err != nil {
				return fmt.Errorf("no logs in %s: %w", dir, err)
			}
			t := &logTail{dir: dir, f: f, out: a.stdout}
			if f.since > 0 {
				t.since = time.Now().Add(-f.since)
			}
			if err := t.scan(); err != nil {
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
	cmd.Flags().BoolVarP(&f.follow, "follow", "f", false, "keep printing new lines")
	cmd.Flags().StringVar(&f.agent, "agent", "", "only this agent (dev, review, daemon, scheduler, webhook, ...)")
	cmd.Flags().StringVar(&f.project, "project", "", "only this project")
	cmd.Flags().DurationVar(&f.since, "since", 0, "only lines newer than this (e.g. 1h)")
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

func (t *logTail) scan() error {
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
	return (t.f.agent == "" || str(m[logx.KeyAgent]) == t.f.agent) &&
		(t.f.project == "" || str(m[logx.KeyProject]) == t.f.project)
}

// formatLogLine renders one JSON log line as "time LVL [agent] message k=v".
func formatLogLine(m map[string]any) string {
	var b strings.Builder
	at, err := time.Parse(time.RFC3339, str(m["time"]))
	if err == nil {
		b.WriteString(at.Local().Format("2006-01-02 15:04:05"))
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

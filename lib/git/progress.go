package git

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress of a long clone: git's --progress lines ("Receiving objects:
// 45% (450/1000), 1.20 MiB | 3.00 MiB/s") reach the log once the clone has
// taken progressQuiet, then at most every progressEvery, so a large first
// clone says what it does and a small one says nothing.
const (
	progressQuiet = 5 * time.Second
	progressEvery = 10 * time.Second
)

// progressWriter is git's stderr during a clone: lines git rewrites in
// place (ended by '\r') are progress only; lines ended by '\n' are progress
// and kept for the error message: the newest of them, within max bytes.
type progressWriter struct {
	mu    sync.Mutex
	line  []byte
	kept  []byte
	max   int
	start time.Time
	// quiet is how long the command runs before the first report; every,
	// the least time between two.
	quiet, every time.Duration
	last         time.Time
	now          func() time.Time
	report       func(line string)
}

func newProgressWriter(max int, now func() time.Time, report func(string)) *progressWriter {
	t := now()
	return &progressWriter{max: max, now: now, start: t, quiet: progressQuiet, every: progressEvery, report: report}
}

// Write splits p into lines at '\r' and '\n'.
func (w *progressWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range p {
		switch b {
		case '\r', '\n':
			w.endLine(b == '\n')
		default:
			if len(w.line) < 4096 {
				w.line = append(w.line, b)
			}
		}
	}
	return len(p), nil
}

func (w *progressWriter) endLine(keep bool) {
	line := strings.TrimSpace(string(w.line))
	w.line = w.line[:0]
	if line == "" {
		return
	}
	if keep {
		// The newest lines are kept: the error comes last.
		w.kept = append(w.kept, line+"\n"...)
		for len(w.kept) > w.max {
			i := bytes.IndexByte(w.kept, '\n')
			if i < 0 || i+1 >= len(w.kept) {
				w.kept = w.kept[:0]
				break
			}
			w.kept = w.kept[i+1:]
		}
	}
	t := w.now()
	if t.Sub(w.start) >= w.quiet && (w.last.IsZero() || t.Sub(w.last) >= w.every) {
		w.last = t
		w.report(line)
	}
}

// String returns the kept lines (what an error message quotes).
func (w *progressWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.kept) + string(w.line)
}

var _ io.Writer = (*progressWriter)(nil)

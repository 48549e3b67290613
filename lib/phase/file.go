package phase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/text"
)

// maxFileSize bounds what Read and ReadResult load: these files are written
// by a model and a runaway write must not exhaust memory.
const maxFileSize = 64 << 10

// State is what a phase file says, plus when it was last written.
type State struct {
	Phase   Phase
	Reason  string    // the "Reason:" line without its label; "" if absent
	ModTime time.Time // modification time of the file
}

// ParseError reports malformed phase-file content. It wraps ErrInvalid.
type ParseError struct {
	Path string // the file; "" when parsing bytes that came from elsewhere
	Line int    // 1-based line number of the offending line
	Text string // the offending line, clipped
	Err  error  // the underlying reason
}

// Error implements error.
func (e *ParseError) Error() string {
	where := e.Path
	if where == "" {
		where = "phase file"
	}
	return fmt.Sprintf("%s:%d: %q: %v", where, e.Line, e.Text, e.Err)
}

// Unwrap returns the underlying reason, which wraps ErrInvalid.
func (e *ParseError) Unwrap() error { return e.Err }

// ParseContent parses the content of a phase file: a "PHASE:<name>" line,
// optionally followed by a "Reason: <text>" line. Blank lines, trailing
// whitespace and CRLF line endings are tolerated; lines after the reason are
// kept as further reason lines. Anything else is a *ParseError. Content with
// nothing but whitespace returns ErrEmpty.
func ParseContent(data []byte) (Phase, string, error) {
	doc := strings.TrimPrefix(string(data), "\ufeff")
	var (
		p      Phase
		reason []string
		inRsn  bool
	)
	for i, line := range strings.Split(doc, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		switch {
		case p == "":
			parsed, err := Parse(line)
			if err != nil {
				return "", "", &ParseError{Line: i + 1, Text: text.Clip(line, maxShown), Err: err}
			}
			p = parsed
		case inRsn:
			reason = append(reason, strings.TrimSpace(line))
		default:
			rest, ok := cutFoldPrefix(strings.TrimSpace(line), "Reason:")
			if !ok {
				err := fmt.Errorf("expected %q after the phase line: %w", "Reason:", ErrInvalid)
				return "", "", &ParseError{Line: i + 1, Text: text.Clip(line, maxShown), Err: err}
			}
			inRsn = true
			reason = append(reason, strings.TrimSpace(rest))
		}
	}
	if p == "" {
		return "", "", ErrEmpty
	}
	return p, strings.Join(reason, "\n"), nil
}

// cutFoldPrefix is strings.CutPrefix ignoring ASCII case.
func cutFoldPrefix(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// Read returns the state recorded in the phase file at path. A missing file
// returns an error wrapping os.ErrNotExist; a file with no content yet
// returns one wrapping ErrEmpty; malformed content returns a *ParseError
// naming the file and the bad line.
func Read(path string) (State, error) {
	data, mod, err := readLimited(path)
	if err != nil {
		return State{}, err
	}
	return parseFile(path, data, mod)
}

func parseFile(path string, data []byte, mod time.Time) (State, error) {
	p, reason, err := ParseContent(data)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.Path = path
			return State{}, pe
		}
		return State{}, fmt.Errorf("read phase %s: %w", path, err)
	}
	return State{Phase: p, Reason: reason, ModTime: mod}, nil
}

// readLimited reads at most maxFileSize bytes of path and its modification
// time. The file is the model's: a symlink or anything but a regular file
// is refused, so it can never make the daemon read its own secrets.
func readLimited(path string) ([]byte, time.Time, error) {
	data, info, err := atomicfile.ReadUntrusted(path, maxFileSize)
	if errors.Is(err, atomicfile.ErrUnsafe) {
		return nil, time.Time{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	return data, info.ModTime(), nil
}

// Write records phase p (and reason, when non-empty) in the file at path,
// atomically: a reader sees the old content or the new, never a mix. Line
// breaks in reason are folded into spaces so the file keeps its two-line
// shape.
func Write(path string, p Phase, reason string) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("write phase %s: %w", path, err)
	}
	var b strings.Builder
	b.WriteString(p.Line())
	b.WriteByte('\n')
	if r := strings.Join(strings.Fields(reason), " "); r != "" {
		b.WriteString("Reason: ")
		b.WriteString(r)
		b.WriteByte('\n')
	}
	if err := writeAtomic(path, []byte(b.String())); err != nil {
		return fmt.Errorf("write phase: %w", err)
	}
	return nil
}

// Clear removes the phase file at path. A missing file is not an error.
func Clear(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clear phase: %w", err)
	}
	return nil
}

// writeAtomic replaces path so that neither a reader nor a crash can
// observe a partial phase.
func writeAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o644)
}

// Changed reports whether s differs from known: another phase, another
// reason, or the same content written again (a later modification time).
func (s State) Changed(known State) bool {
	return s.Phase != known.Phase || s.Reason != known.Reason || !s.ModTime.Equal(known.ModTime)
}

// Wait checks the phase file at path now and after every value received from
// tick, and returns the first valid state that differs from known (pass the
// zero State when no phase has been seen yet). A missing or empty file is
// waited out. Malformed content is returned as a *ParseError only once it
// has been seen unchanged on two consecutive checks, so a writer caught
// between truncating and writing the file is not mistaken for a bad phase.
//
// The caller owns the tick channel: a time.Ticker's C in production, a
// channel it feeds by hand in tests. Wait returns ctx.Err() when ctx ends
// and an error when tick is closed.
func Wait(ctx context.Context, path string, known State, tick <-chan time.Time) (State, error) {
	var lastBad []byte
	var lastBadMod time.Time
	for {
		data, mod, err := readLimited(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			lastBad = nil
		case err != nil:
			return State{}, err
		default:
			s, err := parseFile(path, data, mod)
			switch {
			case err == nil:
				if s.Changed(known) {
					return s, nil
				}
				lastBad = nil
			case errors.Is(err, ErrEmpty):
				lastBad = nil
			default:
				if lastBad != nil && bytes.Equal(lastBad, data) && lastBadMod.Equal(mod) {
					return State{}, err
				}
				lastBad, lastBadMod = data, mod
			}
		}
		select {
		case <-ctx.Done():
			return State{}, ctx.Err()
		case _, ok := <-tick:
			if !ok {
				return State{}, fmt.Errorf("wait for phase %s: tick channel closed", path)
			}
		}
	}
}

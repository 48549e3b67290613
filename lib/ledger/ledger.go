// Package ledger is the run ledger: one append-only JSON line per agent run
// with its terminal reason, dotted outcome code, session id, cost, tokens,
// turns and wall time. It feeds `disinto status`, /metrics and the comments
// on blocked issues.
//
// Files live in one directory: the current file runs.jsonl and rotated
// files runs-<UTC timestamp>.jsonl. Appends are single write calls on an
// O_APPEND file followed by fsync, so a crash leaves at most one torn last
// line, which readers skip and the next writer seals with a newline.
package ledger

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
	"sync"
	"time"

	"github.com/disinto/disinto/lib/redact"
)

// Record is one agent run.
type Record struct {
	// Run identifies the run (scheduler tick or background work).
	Run     string    `json:"run,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Project string    `json:"project"`
	Role    string    `json:"role"`
	Issue   int64     `json:"issue,omitempty"`
	PR      int64     `json:"pr,omitempty"`
	Reason  Reason    `json:"reason"`
	Code    Code      `json:"code,omitempty"`
	// Detail is a short human-readable explanation; the ledger masks
	// secrets in it as in every free-text field.
	Detail       string        `json:"detail,omitempty"`
	SessionID    string        `json:"session_id,omitempty"`
	CostUSD      float64       `json:"cost_usd,omitempty"`
	InputTokens  int64         `json:"input_tokens,omitempty"`
	OutputTokens int64         `json:"output_tokens,omitempty"`
	Turns        int           `json:"turns,omitempty"`
	Wall         time.Duration `json:"wall_ns"`
	// Stages is where the wall time went, in the order the run passed
	// its milestones (for the dev agent: claim to session start, session
	// to pull request, pull request to green CI, green CI to approval,
	// approval to merge).
	Stages []StageTime `json:"stages,omitempty"`
}

// StageTime is the time a run spent between two of its milestones.
type StageTime struct {
	Name string        `json:"name"`
	Wall time.Duration `json:"wall_ns"`
}

// ErrInvalid is wrapped by Append for records that fail validation.
var ErrInvalid = errors.New("invalid ledger record")

// Validate checks the fields every record must have.
func (r Record) Validate() error {
	switch {
	case r.Project == "":
		return fmt.Errorf("%w: no project", ErrInvalid)
	case r.Role == "":
		return fmt.Errorf("%w: no role", ErrInvalid)
	case r.Start.IsZero() || r.End.IsZero():
		return fmt.Errorf("%w: no start or end time", ErrInvalid)
	}
	if err := r.Reason.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if r.Code != "" || r.Reason.Failure() {
		if err := r.Code.Validate(); err != nil {
			return fmt.Errorf("%w: reason %s: %w", ErrInvalid, r.Reason, err)
		}
	}
	return nil
}

// Redacted returns r with secrets masked in its free-text fields (a nil
// red still masks credential-shaped text). Reason and Code are closed
// vocabularies that validation checks.
func (r Record) Redacted(red *redact.Redactor) Record {
	for _, f := range []*string{&r.Run, &r.Project, &r.Role, &r.Detail, &r.SessionID} {
		*f = red.String(*f)
	}
	return r
}

const (
	currentName = "runs.jsonl"
	// DefaultMaxBytes is the size at which the current file is rotated.
	DefaultMaxBytes = 10 << 20
	// DefaultMaxFiles is how many rotated files are kept.
	DefaultMaxFiles = 10
)

// Options configures a Ledger.
type Options struct {
	// MaxBytes rotates the current file once it is this large (default 10 MiB).
	MaxBytes int64
	// MaxFiles is how many rotated files are kept (default 10).
	MaxFiles int
	// Now stamps rotated file names; nil means time.Now.
	Now func() time.Time
	// Redactor masks secrets in every free-text field before a record is
	// written; nil still masks credential-shaped text.
	Redactor *redact.Redactor
}

// Ledger appends records to the files of one directory. It is safe for
// concurrent use within a process; one daemon per data dir is enforced by
// the daemon lock, not here.
type Ledger struct {
	dir  string
	opts Options

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open opens (creating if needed) the ledger in dir.
func Open(dir string, opts Options) (*Ledger, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create ledger dir: %w", err)
	}
	l := &Ledger{dir: dir, opts: opts}
	if err := l.openCurrent(); err != nil {
		return nil, err
	}
	return l, nil
}

// Dir returns the ledger directory.
func (l *Ledger) Dir() string { return l.dir }

func (l *Ledger) openCurrent() error {
	path := filepath.Join(l.dir, currentName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("stat ledger: %w", err)
	}
	l.f, l.size = f, st.Size()
	// A crash may have left a torn last line; seal it so the next record
	// starts on a line of its own.
	if l.size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, l.size-1); err != nil {
			return fmt.Errorf("read ledger tail: %w", err)
		}
		if last[0] != '\n' {
			n, err := f.Write([]byte{'\n'})
			if err != nil {
				return fmt.Errorf("seal torn ledger line: %w", err)
			}
			l.size += int64(n)
		}
	}
	return nil
}

// Append masks secrets in r, validates it and writes it as one line. End
// defaults to Start+Wall and Wall to End-Start when either is zero.
func (l *Ledger) Append(r Record) error {
	r = r.Redacted(l.opts.Redactor)
	if r.End.IsZero() && !r.Start.IsZero() {
		r.End = r.Start.Add(r.Wall)
	}
	if r.Wall == 0 && !r.Start.IsZero() {
		r.Wall = r.End.Sub(r.Start)
	}
	if err := r.Validate(); err != nil {
		return err
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode ledger record: %w", err)
	}
	line = append(line, '\n')

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("ledger closed")
	}
	if l.size > 0 && l.size+int64(len(line)) > l.opts.MaxBytes {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(line)
	l.size += int64(n)
	if err != nil {
		return fmt.Errorf("write ledger: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sync ledger: %w", err)
	}
	return nil
}

// rotate renames the current file, prunes old ones and opens a fresh
// current file; l.mu is held. Only failing to reopen is fatal: when the
// rename fails the record goes to the current file and the next append
// tries again, and a failed prune is retried at the next rotation, so a
// bad moment on disk never closes the ledger for good.
func (l *Ledger) rotate() error {
	_ = l.f.Close() // the descriptor is released even when Close fails
	l.f = nil
	if dst, err := l.rotatedName(); err == nil {
		if os.Rename(filepath.Join(l.dir, currentName), dst) == nil {
			l.prune()
		}
	}
	return l.openCurrent()
}

// rotatedName returns a name for the file being rotated that no existing
// file has and that sorts after the rotated files of the same stamp.
func (l *Ledger) rotatedName() (string, error) {
	stamp := "runs-" + l.opts.Now().UTC().Format("20060102T150405.000000000")
	for i := 0; i < 1000; i++ {
		name := stamp + ".jsonl"
		if i > 0 {
			// "_" sorts after ".", so the names stay in time order.
			name = fmt.Sprintf("%s_%03d.jsonl", stamp, i)
		}
		dst := filepath.Join(l.dir, name)
		if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
			return dst, nil
		}
	}
	return "", fmt.Errorf("rotate ledger: no free name for %s", stamp)
}

// prune removes the oldest rotated files beyond MaxFiles; l.mu is held.
func (l *Ledger) prune() {
	rotated, err := rotatedFiles(l.dir)
	if err != nil {
		return
	}
	for len(rotated) > l.opts.MaxFiles {
		_ = os.Remove(rotated[0])
		rotated = rotated[1:]
	}
}

// Close closes the current file.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("close ledger: %w", err)
	}
	return nil
}

// rotatedFiles lists rotated files oldest first (names sort by time).
func rotatedFiles(dir string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "runs-*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("list ledger files: %w", err)
	}
	sort.Strings(matches)
	return matches, nil
}

// Filter selects records in Read. Zero fields match everything.
type Filter struct {
	Project string
	Role    string
	// Since keeps records that ended at or after it.
	Since time.Time
}

func (f Filter) match(r Record) bool {
	return (f.Project == "" || r.Project == f.Project) &&
		(f.Role == "" || r.Role == f.Role) &&
		(f.Since.IsZero() || !r.End.Before(f.Since))
}

// Read returns the records of dir matching f, oldest first. Lines that do
// not parse (a torn write after a crash) are skipped and counted in skipped.
// A missing directory is an empty ledger.
//
// Read may run while a writer rotates: it opens the current file before
// listing the rotated ones, and reads that file once, at its place in the
// list if it was rotated in between, so no record appended before Read
// began is missed or read twice.
func Read(dir string, f Filter) (recs []Record, skipped int, err error) {
	cur, err := os.Open(filepath.Join(dir, currentName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, 0, fmt.Errorf("read ledger: %w", err)
	}
	var curInfo os.FileInfo
	if cur != nil {
		defer cur.Close()
		if curInfo, err = cur.Stat(); err != nil {
			return nil, 0, fmt.Errorf("read ledger: %w", err)
		}
	}
	files, err := rotatedFiles(dir)
	if err != nil {
		return nil, 0, err
	}
	keep := func(r Record) {
		if f.match(r) {
			recs = append(recs, r)
		}
	}
	readFile := func(file *os.File) error {
		s, err := decode(file, keep)
		if err != nil {
			return fmt.Errorf("read ledger %s: %w", filepath.Base(file.Name()), err)
		}
		skipped += s
		return nil
	}
	for _, path := range files {
		file, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // pruned since it was listed
		}
		if err != nil {
			return nil, 0, fmt.Errorf("read ledger: %w", err)
		}
		if st, serr := file.Stat(); serr == nil && curInfo != nil && os.SameFile(st, curInfo) {
			_ = file.Close()
			file, cur = cur, nil
		}
		err = readFile(file)
		_ = file.Close()
		if err != nil {
			return nil, 0, err
		}
	}
	if cur != nil {
		if err := readFile(cur); err != nil {
			return nil, 0, err
		}
	}
	return recs, skipped, nil
}

func decode(r io.Reader, fn func(Record)) (skipped int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var rec Record
		if json.Unmarshal([]byte(line), &rec) != nil {
			skipped++
			continue
		}
		fn(rec)
	}
	return skipped, sc.Err()
}

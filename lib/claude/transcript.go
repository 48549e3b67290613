package claude

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/disinto/disinto/lib/redact"
)

// transcript is the per-run copy of the CLI's stream-json output, redacted
// line by line and readable only by the daemon's user. A transcript with
// no file accepts and drops everything.
type transcript struct {
	path string
	f    *os.File
	red  *redact.Redactor
	err  error
}

func (t *transcript) Write(b []byte) (int, error) {
	if t.f == nil || t.err != nil {
		return len(b), t.err
	}
	if _, err := t.f.WriteString(t.red.String(string(b))); err != nil {
		t.err = err
	}
	return len(b), t.err
}

// Close syncs and closes the file and reports the first write error.
func (t *transcript) Close() error {
	if t.f == nil {
		return nil
	}
	err := t.err
	if serr := t.f.Sync(); err == nil {
		err = serr
	}
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("transcript %s: %w", t.path, err)
	}
	return nil
}

var unsafeLabel = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// TranscriptName is the file name derived for a run labelled label that
// started at stamp (e.g. "dev-issue-42-20260102T150405.000.jsonl").
func TranscriptName(label, stamp string) string {
	label = strings.Trim(unsafeLabel.ReplaceAllString(label, "-"), "-.")
	if label == "" {
		label = "run"
	}
	return label + "-" + stamp + ".jsonl"
}

func (e *Exec) openTranscript(inv Invocation) (*transcript, error) {
	path := inv.TranscriptPath
	if path == "" && e.opts.TranscriptDir != "" {
		stamp := e.now().UTC().Format("20060102T150405.000000000")
		path = filepath.Join(e.opts.TranscriptDir, TranscriptName(inv.Label, stamp))
	}
	if path == "" {
		return &transcript{}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("transcript dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open transcript: %w", err)
	}
	return &transcript{path: path, f: f, red: e.opts.Redactor}, nil
}

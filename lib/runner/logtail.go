package runner

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/disinto/disinto/lib/redact"
)

// logTail keeps the last bytes a job wrote, enough to give limit bytes of
// masked text. It is an io.Writer safe for the two demuxed streams at once.
//
// Masking happens once, at the end, on everything kept: a secret cut in
// two by a chunk boundary is still whole in the buffer. Only the oldest
// kept bytes can hold the tail of a secret whose start was dropped, which
// no redactor can recognise; margin (longer than any form of any secret)
// of the masked text is discarded from the front for that reason.
type logTail struct {
	mu     sync.Mutex
	buf    []byte
	limit  int
	margin int
	total  int64
}

// newLogTail keeps limit bytes of output, with a margin wide enough for
// the longest of secrets in any escaped form.
func newLogTail(limit int, secrets map[string]string) *logTail {
	longest := 0
	for _, v := range secrets {
		longest = max(longest, len(v))
	}
	// \u00XX escaping, the widest form redact knows, makes 6 bytes of one.
	return &logTail{limit: limit, margin: 6*longest + 16}
}

// Write keeps the last limit+2*margin bytes of everything written.
func (t *logTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	t.buf = append(t.buf, p...)
	if keep := t.limit + 2*t.margin; len(t.buf) > keep {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-keep:]...)
	}
	return len(p), nil
}

// text is the masked tail, at most limit bytes of valid UTF-8, and the
// number of bytes written in all.
func (t *logTail) text(r *redact.Redactor) (string, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := r.String(string(t.buf))
	if t.total > int64(len(t.buf)) {
		// The front may start inside a secret: drop it.
		if len(s) <= t.margin {
			s = ""
		} else {
			s = s[t.margin:]
		}
	}
	if len(s) > t.limit {
		s = s[len(s)-t.limit:]
	}
	// A cut may split a character: drop the partial one.
	for s != "" && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return strings.ToValidUTF8(s, "?"), t.total
}

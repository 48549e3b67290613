// Package redact masks secret values in text before it reaches a log line,
// a forge comment or an error message.
//
// A secret is masked in every form the daemon's encoders write it in: as
// is, JSON-escaped (zerolog and encoding/json turn " into \" and \ into
// \\; the console quotes values the same way) and URL-escaped (query and
// path escaping, so % becomes %25 and a space + or %20). A redactor that
// knew only the raw value would miss a secret holding any of " \ % or a
// space once it had been through one of them.
package redact

import (
	"encoding/json"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Mask is what every secret is replaced with.
const Mask = "[REDACTED]"

// minSecretLen is the shortest value treated as a secret. Shorter values
// (empty strings, "0", "true") would mask ordinary text everywhere.
const minSecretLen = 6

// patterns catch credentials that were never configured but still look like
// ones: URLs with embedded user:password, bearer tokens and private keys.
var patterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(https?://)[^/\s:@]+:[^/\s@]+@`),
	regexp.MustCompile(`(?i)(authorization:\s*(?:bearer|token|basic)\s+)[A-Za-z0-9._~+/=-]+`),
	regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----`),
	regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{10,}`),
}

// Redactor replaces known secret values and credential-shaped text with
// Mask. The zero value masks only the built-in patterns. It is safe for
// concurrent use.
type Redactor struct {
	mu sync.RWMutex
	// secrets holds every form of every secret, longest first, so a
	// secret containing another is masked whole.
	secrets []string
}

// New returns a Redactor that masks the given secret values.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add registers more secret values, in all their escaped forms. Values
// shorter than six characters are ignored.
func (r *Redactor) Add(secrets ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make(map[string]bool, len(r.secrets))
	for _, s := range r.secrets {
		seen[s] = true
	}
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) < minSecretLen {
			continue
		}
		for _, f := range forms(s) {
			if !seen[f] {
				seen[f] = true
				r.secrets = append(r.secrets, f)
			}
		}
	}
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
}

// forms returns s as written by each encoder between a value and the
// daemon's output: JSON with and without HTML escaping (<, >, & as \u003c
// …), Go quoting (the console writer's), and URL query and path escaping
// with upper- and lower-case hex digits.
func forms(s string) []string {
	q, p := url.QueryEscape(s), url.PathEscape(s)
	quoted := strconv.Quote(s)
	return []string{s, jsonString(s, false), jsonString(s, true), quoted[1 : len(quoted)-1],
		q, p, lowerHex(q), lowerHex(p)}
}

// jsonString is s encoded as a JSON string, without the quotes.
func jsonString(s string, escapeHTML bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(s) // a string always encodes
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// lowerHex rewrites the %XX escapes of s with lower-case hex digits.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = toLower(b[i+1]), toLower(b[i+2])
		}
	}
	return string(b)
}

func toLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// String returns s with every secret masked. A nil Redactor still masks the
// built-in credential patterns.
func (r *Redactor) String(s string) string {
	if r != nil {
		r.mu.RLock()
		for _, secret := range r.secrets {
			if strings.Contains(s, secret) {
				s = strings.ReplaceAll(s, secret, Mask)
			}
		}
		r.mu.RUnlock()
	}
	for _, p := range patterns {
		s = p.ReplaceAllStringFunc(s, func(m string) string {
			sub := p.FindStringSubmatch(m)
			if len(sub) > 1 {
				return sub[1] + Mask + trailingAt(m)
			}
			return Mask
		})
	}
	return s
}

// trailingAt keeps the "@" of a user:password@host URL so the host stays
// readable after masking.
func trailingAt(m string) string {
	if strings.HasSuffix(m, "@") {
		return "@"
	}
	return ""
}

// Error returns err's message with secrets masked, or "" for a nil error.
func (r *Redactor) Error(err error) string {
	if err == nil {
		return ""
	}
	return r.String(err.Error())
}

// Writer wraps w so that everything written through it is masked. Each Write
// is masked on its own, which suits line-oriented writers such as loggers
// (zerolog writes one whole event per call).
func (r *Redactor) Writer(w io.Writer) io.Writer {
	return &writer{r: r, w: w}
}

type writer struct {
	r *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	masked := w.r.String(string(p))
	if _, err := io.WriteString(w.w, masked); err != nil {
		return 0, err
	}
	// Report the caller's length: the masked text may be shorter or longer.
	return len(p), nil
}

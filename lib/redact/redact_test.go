package redact_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/redact"
)

func TestString(t *testing.T) {
	r := redact.New("tok-abcdef123456", "tok-abcdef123456-longer", "short", "")
	tests := []struct{ in, want string }{
		{"token tok-abcdef123456 here", "token [REDACTED] here"},
		{"tok-abcdef123456-longer", "[REDACTED]"},
		{"short values like short stay", "short values like short stay"},
		{"clone http://dev-bot:hunter22@forge:3000/o/r.git", "clone http://[REDACTED]@forge:3000/o/r.git"},
		{"Authorization: token 0123456789abcdef", "Authorization: token [REDACTED]"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----", "[REDACTED]"},
		{"key sk-ant-api03-abcdefghijklmnop", "key [REDACTED]"},
		{"nothing secret", "nothing secret"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var nilR *redact.Redactor
	if got := nilR.String("http://u:p4ssword@h/"); strings.Contains(got, "p4ssword") {
		t.Errorf("nil redactor leaks URL credentials: %q", got)
	}
	if got := r.Error(errors.New("push failed: tok-abcdef123456")); strings.Contains(got, "tok-abcdef123456") {
		t.Errorf("Error leaks: %q", got)
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := redact.New("s3cr3t-value").Writer(&buf)
	n, err := w.Write([]byte("a s3cr3t-value b\n"))
	if err != nil || n != len("a s3cr3t-value b\n") {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if buf.String() != "a [REDACTED] b\n" {
		t.Errorf("got %q", buf.String())
	}
}

// TestEscapedForms masks secrets holding ", \, % and spaces in the forms
// each encoder of the daemon's output writes them in.
func TestEscapedForms(t *testing.T) {
	secrets := []string{`quo"te-secret`, `back\slash-secret`, `per%cent-secret`, `all "\% <&> of+them`}
	encoders := map[string]func(s string) string{
		"zerolog JSON": func(s string) string {
			var b bytes.Buffer
			log := zerolog.New(&b)
			log.Info().Str("v", s).Msg(s)
			return b.String()
		},
		"encoding/json": func(s string) string { b, _ := json.Marshal(map[string]string{"v": s}); return string(b) },
		"Go quoting":    strconv.Quote,
		"query escape":  func(s string) string { return "http://h/?q=" + url.QueryEscape(s) },
		"path escape":   func(s string) string { return "http://h/" + url.PathEscape(s) + "/x" },
		"form values":   func(s string) string { return url.Values{"a": {s}}.Encode() },
		"lower-case hex": func(s string) string {
			return strings.NewReplacer("%2B", "%2b", "%3C", "%3c", "%3E", "%3e", "%5C", "%5c").Replace(url.QueryEscape(s))
		},
	}
	r := redact.New(secrets...)
	for _, s := range secrets {
		for name, enc := range encoders {
			in := enc(s)
			out := r.String(in)
			if !strings.Contains(out, redact.Mask) {
				t.Errorf("%s of %q not masked: %s", name, s, out)
			}
			if strings.HasPrefix(in, "{") && !json.Valid([]byte(out)) {
				t.Errorf("%s of %q: masking broke the JSON: %s", name, s, out)
			}
		}
	}
	var b bytes.Buffer
	log := zerolog.New(r.Writer(&b))
	log.Error().Err(errors.New("rejected " + secrets[3])).Msg("tick")
	if strings.Contains(b.String(), "them") {
		t.Errorf("writer leaks a JSON-escaped secret: %s", b.String())
	}
}

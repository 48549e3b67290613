package redact_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

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

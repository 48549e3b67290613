package edge

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A log as Caddy writes it (format json, the default float ts), with the
// lines a real log also holds: another logger's, a torn last line, a
// string ts, a query string.
const sampleLog = `{"level":"info","ts":1764633600.25,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"10.0.0.1","client_ip":"203.0.113.7","proto":"HTTP/1.1","method":"GET","host":"example.org","uri":"/chat/login?next=%2F","headers":{"Cookie":["REDACTED"]}},"bytes_read":0,"user_id":"","duration":0.001,"size":512,"status":200,"resp_headers":{}}
{"level":"info","ts":1764637200,"logger":"tls.obtain","msg":"certificate obtained"}
{"level":"error","ts":"2025-12-02T10:00:00.5Z","logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"198.51.100.2","uri":"/factory/status"},"status":502}

{"level":"info","ts":1764640800.0,"logger":"http.log.access.log0","request":{"remote_ip":"198.51.100.2","uri":"/owner/repo/issues"},"status":404}
not json at all
{"level":"info","ts":1764640801.0,"logger":"http.log.access.log0","request":{"remote_ip":"198.51.100.2","uri":"/chat"},"status":200}
{"level":"info","ts":17646408`

func TestReadAccessLog(t *testing.T) {
	var hits []Hit
	skipped, err := ReadAccessLog(strings.NewReader(sampleLog), func(h Hit) { hits = append(hits, h) })
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 3 { // tls.obtain, not json, the torn line
		t.Errorf("skipped %d lines, want 3", skipped)
	}
	want := []Hit{
		{Time: time.Unix(1764633600, 250_000_000).UTC(), Path: "/chat/login", Status: 200, Client: "203.0.113.7"},
		{Time: time.Date(2025, 12, 2, 10, 0, 0, 500_000_000, time.UTC), Path: "/factory/status", Status: 502, Client: "198.51.100.2"},
		{Time: time.Unix(1764640800, 0).UTC(), Path: "/owner/repo/issues", Status: 404, Client: "198.51.100.2"},
		{Time: time.Unix(1764640801, 0).UTC(), Path: "/chat", Status: 200, Client: "198.51.100.2"},
	}
	if len(hits) != len(want) {
		t.Fatalf("hits %+v, want %+v", hits, want)
	}
	for i := range want {
		if !hits[i].Time.Equal(want[i].Time) || hits[i].Path != want[i].Path || hits[i].Status != want[i].Status || hits[i].Client != want[i].Client {
			t.Errorf("hit %d = %+v, want %+v", i, hits[i], want[i])
		}
	}
}

// A line longer than the reader's buffer is skipped whole, and the lines
// after it are read.
func TestReadAccessLogLongLine(t *testing.T) {
	long := `{"logger":"http.log.access","ts":1764633600,"request":{"uri":"/` + strings.Repeat("a", maxLogLine+10) + `"},"status":200}`
	good := `{"logger":"http.log.access","ts":1764633600,"request":{"uri":"/chat"},"status":200}`
	var hits []Hit
	skipped, err := ReadAccessLog(strings.NewReader(long+"\n"+good+"\n"), func(h Hit) { hits = append(hits, h) })
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 1 || len(hits) != 1 || hits[0].Path != "/chat" {
		t.Errorf("skipped %d, hits %+v; want the long line skipped once and /chat read", skipped, hits)
	}
}

func TestRouteOf(t *testing.T) {
	routes := Config{}.Routes()
	for path, want := range map[string]string{
		"/chat/login":          RouteChatLogin,
		"/chat/oauth/callback": RouteChatLogin,
		"/chat":                RouteChat,
		"/chat/c/1":            RouteChat,
		"/chatter":             RouteForge, // "/chat" is exact, "/chat/*" a prefix with the slash
		"/factory/":            RouteFactory,
		"/":                    RouteForge,
		"/owner/repo/pulls/3":  RouteForge,
	} {
		if got := RouteOf(routes, path); got != want {
			t.Errorf("RouteOf(%q) = %q, want %q", path, got, want)
		}
	}
	if got := RouteOf([]Route{{Name: "x", Paths: []string{"/x"}}}, "/y"); got != "" {
		t.Errorf("no route matches /y, got %q", got)
	}
}

// The access log is written only where told, to a path the Caddyfile
// holds as it is.
func TestCaddyfileAccessLog(t *testing.T) {
	text, err := Caddyfile(Config{AccessLog: "/var/log/edge/access.log"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\tlog {\n\t\toutput file /var/log/edge/access.log {", "roll_size " + AccessLogRollSize, "\t\tformat json\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("Caddyfile lacks %q:\n%s", want, text)
		}
	}
	if text, _ := Caddyfile(Config{}); strings.Contains(text, "log {") {
		t.Errorf("an access log without AccessLog:\n%s", text)
	}
	for _, bad := range []string{"access.log", "/var/log/a b.log", "/x}\n\thandle {", "/x{$SECRET}"} {
		err := Config{AccessLog: bad}.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != FieldLog {
			t.Errorf("AccessLog %q: %v, want a %s error", bad, err, FieldLog)
		}
	}
}

package edge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// AccessLogEnv names the edge's access log: Caddy writes one JSON line
// per request there (the edge container), and the daemon reads it for
// the engagement evidence (the agents container, the same volume read
// only). Unset: the edge logs no access and there is no engagement
// evidence.
const AccessLogEnv = "DISINTO_EDGE_ACCESS_LOG"

// The access log rolls at this size, keeping this many rolled files
// (compressed): the daemon reads the current file every day, so a day's
// requests are read before they roll away unless a day fills more than
// one file.
const (
	AccessLogRollSize = "50MiB"
	AccessLogRollKeep = 3
)

// logPathRe is an access log path the Caddyfile can hold as it is.
var logPathRe = regexp.MustCompile(`^/[A-Za-z0-9._/-]+$`)

// maxLogLine bounds one line of the access log; a longer one (a request
// with enormous headers) is skipped.
const maxLogLine = 1 << 20

// Hit is one request of the access log, as much of it as the evidence
// needs: no header, no query string, no user.
type Hit struct {
	Time   time.Time
	Path   string
	Status int
	// Client is the address the request came from (client_ip when Caddy
	// knows it, else remote_ip); counted, never written out.
	Client string
}

// accessLine is the part of a line of Caddy's JSON access log
// (logger "http.log.access...") that Hit takes.
type accessLine struct {
	Logger  string          `json:"logger"`
	TS      json.RawMessage `json:"ts"`
	Status  int             `json:"status"`
	Request struct {
		URI      string `json:"uri"`
		RemoteIP string `json:"remote_ip"`
		ClientIP string `json:"client_ip"`
	} `json:"request"`
}

// ReadAccessLog calls fn with every request of Caddy's JSON access log
// in r, in file order. A line that is not an access entry (another
// logger's, torn by a crash, not JSON) is skipped and counted: a log is
// evidence, and one bad line must not hide the rest. The error is the
// reader's only.
func ReadAccessLog(r io.Reader, fn func(Hit)) (skipped int, err error) {
	br := bufio.NewReaderSize(r, maxLogLine)
	long := false // inside a line longer than the buffer
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull:
			if !long {
				skipped++
			}
			long = true
			continue
		case long:
			// The tail of the long line.
			long = false
		default:
			if l := bytes.TrimSpace(line); len(l) > 0 {
				if h, ok := parseAccessLine(l); ok {
					fn(h)
				} else {
					skipped++
				}
			}
		}
		if err == io.EOF {
			return skipped, nil
		}
		if err != nil {
			return skipped, fmt.Errorf("read the access log: %w", err)
		}
	}
}

// parseAccessLine reads one line; ok is false for anything but an access
// entry with a time and a path.
func parseAccessLine(line []byte) (Hit, bool) {
	var l accessLine
	if err := json.Unmarshal(line, &l); err != nil {
		return Hit{}, false
	}
	if l.Logger != "" && !strings.HasPrefix(l.Logger, "http.log.access") {
		return Hit{}, false
	}
	t, ok := parseTS(l.TS)
	if !ok || l.Request.URI == "" {
		return Hit{}, false
	}
	p := l.Request.URI
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	if !strings.HasPrefix(p, "/") {
		return Hit{}, false
	}
	client := l.Request.ClientIP
	if client == "" {
		client = l.Request.RemoteIP
	}
	return Hit{Time: t.UTC(), Path: p, Status: l.Status, Client: client}, true
}

// parseTS reads Caddy's ts: seconds since the epoch as a number (the
// default), or a string in RFC 3339 (time_format iso8601 or rfc3339) or
// of such a number.
func parseTS(raw json.RawMessage) (time.Time, bool) {
	if len(raw) == 0 {
		return time.Time{}, false
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil {
		return epoch(f)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z0700", "2006/01/02 15:04:05.000"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return epoch(f)
	}
	return time.Time{}, false
}

func epoch(f float64) (time.Time, bool) {
	if f <= 0 || math.IsNaN(f) || math.IsInf(f, 0) || f > 1e11 {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}

// RouteOf names the route of routes (in matching order, as Routes gives
// them) that serves path, as Caddy's path matcher decides: a path ending
// in "*" matches by prefix, any other exactly, and a route without paths
// matches everything. "" when none does.
func RouteOf(routes []Route, path string) string {
	for _, r := range routes {
		if len(r.Paths) == 0 {
			return r.Name
		}
		for _, p := range r.Paths {
			if pre, ok := strings.CutSuffix(p, "*"); ok {
				if strings.HasPrefix(path, pre) {
					return r.Name
				}
			} else if path == p {
				return r.Name
			}
		}
	}
	return ""
}

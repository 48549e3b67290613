package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrNotRunning says no daemon runs on the data dir: it has no daemon.json,
// or nothing listens where the file says.
var ErrNotRunning = errors.New("no daemon runs")

// RefusedError is a daemon that runs but did not hand out its /status.
type RefusedError struct {
	Addr string
	Code int
	// TokenSet says whether the request carried DISINTO_STATUS_TOKEN.
	TokenSet bool
}

func (e *RefusedError) Error() string {
	prefix := fmt.Sprintf("the daemon runs but %s refused /status (%d %s)", e.Addr, e.Code, http.StatusText(e.Code))
	switch {
	case e.Code != http.StatusUnauthorized && e.Code != http.StatusForbidden:
		return prefix
	case e.TokenSet:
		return prefix + ": " + EnvStatusToken + " is not the daemon's; set the one the daemon was started with (env file or environment)"
	default:
		return prefix + ": " + EnvStatusToken + " is not set; set the daemon's token in the env file or the environment"
	}
}

// statusTimeout bounds the whole /status exchange of FetchStatus: the
// daemon answers it from memory.
const statusTimeout = 5 * time.Second

// FetchStatus asks the daemon of dataDir for its /status, on the status
// listener its daemon.json names, sending token as the bearer when set.
// It returns ErrNotRunning when no daemon is there, a *RefusedError when
// one answers with anything but 200, and another error when one listens
// but does not answer.
func FetchStatus(ctx context.Context, dataDir, token string, hc *http.Client) (Report, error) {
	info, ok := ReadInfo(dataDir)
	if !ok {
		return Report{}, ErrNotRunning
	}
	addr := info.Status
	if addr == "" {
		addr = info.Listen
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Report{}, fmt.Errorf("daemon.json: status address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	addr = net.JoinHostPort(host, port)
	rep, err := fetchStatusAt(ctx, "http://"+addr, addr, token, hc)
	if errors.Is(err, syscall.ECONNREFUSED) {
		// daemon.json outlived its daemon.
		return Report{}, ErrNotRunning
	}
	if err != nil {
		return Report{}, err
	}
	if rep.Daemon != nil {
		rep.Daemon.PID, rep.Daemon.Listen, rep.Daemon.Status = info.PID, info.Listen, info.Status
	}
	return rep, nil
}

// FetchStatusFrom asks the daemon whose status listener is at base (an
// http or https URL, such as http://agents.example.org:8080) for its
// /status, with token when one is set: the status of a daemon on another
// machine, or of one replica among several.
func FetchStatusFrom(ctx context.Context, base, token string, hc *http.Client) (Report, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		// Named without what a URL's user part may hold, a password.
		name := "that is no URL"
		if err == nil {
			name = fmt.Sprintf("%q", u.Redacted())
		}
		return Report{}, fmt.Errorf("status URL %s: want http(s)://host[:port][/path], with no credentials, query or fragment", name)
	}
	return fetchStatusAt(ctx, u.String(), u.Redacted(), token, hc)
}

// fetchStatusAt reads base/status; addr names the daemon in errors. A
// refused connection wraps syscall.ECONNREFUSED.
func fetchStatusAt(ctx context.Context, base, addr, token string, hc *http.Client) (Report, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/status", nil)
	if err != nil {
		return Report{}, fmt.Errorf("status address %q: %w", addr, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Report{}, fmt.Errorf("the daemon at %s does not answer /status: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return Report{}, &RefusedError{Addr: addr, Code: resp.StatusCode, TokenSet: token != ""}
	}
	var rep Report
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&rep); err != nil {
		return Report{}, fmt.Errorf("the daemon at %s sent a /status that does not decode: %s", addr, strings.TrimSpace(err.Error()))
	}
	return rep, nil
}

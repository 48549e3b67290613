package daemon

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The daemon serves on two listeners, each for its own audience:
//
//   - the hook listener (DISINTO_LISTEN) answers /healthz and the webhook
//     receiver, which checks the HMAC of every delivery. The forge must
//     reach it, so in compose it listens on the container network (:8080).
//   - the status listener (DISINTO_STATUS_LISTEN) answers /status,
//     /metrics and any page added for people or tools. It is for the host
//     and `disinto status`: loopback by default, and off loopback only with
//     DISINTO_STATUS_TOKEN, which every request must then carry as a bearer
//     token. The daemon refuses to start otherwise.
//
// Splitting by audience, rather than guarding routes by the peer's
// address, keeps /status away from anything that can reach the webhook,
// including a proxy on the same host that makes every client look local.
const (
	EnvListen       = "DISINTO_LISTEN"
	EnvStatusListen = "DISINTO_STATUS_LISTEN"
	EnvStatusToken  = "DISINTO_STATUS_TOKEN"
	EnvReadTimeout  = "DISINTO_HTTP_READ_TIMEOUT"

	DefaultListen       = "127.0.0.1:8080"
	DefaultStatusListen = "127.0.0.1:8081"
	DefaultReadTimeout  = 30 * time.Second

	// MinStatusToken is the shortest bearer token accepted.
	MinStatusToken = 16
)

// HTTP are the daemon's listeners as given (flags or environment):
// the webhook receiver's address, that of /status and /metrics, and the
// time a client has to send a whole request (seconds or a duration).
type HTTP struct {
	Listen, StatusListen, ReadTimeout string
}

// httpSettings are the checked settings of the daemon's HTTP servers.
type httpSettings struct {
	readTimeout time.Duration
	statusToken string
}

// checkHTTPSettings validates the flags and the token (from the env file
// or the environment); every error is one line naming the variable.
func checkHTTPSettings(h HTTP, token string) (httpSettings, error) {
	d, err := parseSeconds(h.ReadTimeout)
	if err != nil || d <= 0 {
		return httpSettings{}, fmt.Errorf("%s (--read-timeout) %q is not a positive duration (e.g. 30s)", EnvReadTimeout, h.ReadTimeout)
	}
	if token != "" && len(token) < MinStatusToken {
		return httpSettings{}, fmt.Errorf("%s is shorter than %d characters", EnvStatusToken, MinStatusToken)
	}
	return httpSettings{readTimeout: d, statusToken: token}, nil
}

// parseSeconds reads a Go duration or a whole number of seconds, as the
// other durations of the environment.
func parseSeconds(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(s)
}

// openListeners opens the hook and the status listener. A status listener
// bound to anything but loopback needs a token.
func openListeners(h HTTP, token string) (hook, status net.Listener, err error) {
	hook, err = net.Listen("tcp", h.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("%s (--listen) %s: %w", EnvListen, h.Listen, err)
	}
	status, err = net.Listen("tcp", h.StatusListen)
	if err != nil {
		_ = hook.Close()
		return nil, nil, fmt.Errorf("%s (--status-listen) %s: %w", EnvStatusListen, h.StatusListen, err)
	}
	if token == "" && !isLoopback(status.Addr()) {
		_, _ = hook.Close(), status.Close()
		return nil, nil, fmt.Errorf("%s (--status-listen) %s is not a loopback address: set %s so /status and /metrics require it, or listen on 127.0.0.1",
			EnvStatusListen, h.StatusListen, EnvStatusToken)
	}
	return hook, status, nil
}

// isLoopback reports whether a listener is bound to a loopback address
// only (not to every interface).
func isLoopback(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

// newHTTPServer returns a server that no client can hold open: the whole
// request must arrive within read (a body trickled byte by byte is cut
// off), the answer within read plus half a minute (the webhook reads its
// body inside the handler), and an idle connection is closed after two
// minutes.
func newHTTPServer(h http.Handler, read time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(10*time.Second, read),
		ReadTimeout:       read,
		WriteTimeout:      read + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// requireBearer lets through only requests with "Authorization: Bearer
// <token>", or basic authorization with the token as its password (any
// user name: what a browser asks for, so the status page can be read in
// one), compared in constant time; an empty token lets everything
// through. /healthz stays open for health checks: it tells nothing.
func requireBearer(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		// Hashing first makes the comparison independent of the length
		// of either token.
		got := sha256.Sum256([]byte(bearer(r)))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Add("WWW-Authenticate", `Basic realm="disinto status", charset="UTF-8"`)
			w.Header().Add("WWW-Authenticate", `Bearer realm="disinto"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearer returns the token of a request's bearer authorization, or the
// password of its basic authorization, or "".
func bearer(r *http.Request) string {
	if _, pass, ok := r.BasicAuth(); ok {
		return pass
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// serve runs srv on ln until it is shut down; any other end is an error.
func serve(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

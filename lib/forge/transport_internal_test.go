package forge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// scripted serves statuses in order, then 200 with body.
func scripted(t *testing.T, statuses []int, headers map[string]string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i < len(statuses) {
			for k, v := range headers {
				w.Header().Set(k, v)
			}
			w.WriteHeader(statuses[i])
			_, _ = w.Write([]byte(`{"message":"scripted"}`))
			return
		}
		_, _ = w.Write([]byte(`{"id":1,"login":"dev-bot"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// newTestClient returns a client whose backoff waits are recorded, not slept.
func newTestClient(t *testing.T, url string, retries int) (*Client, *[]time.Duration) {
	t.Helper()
	c, err := New(Options{URL: url, Token: "tok", User: "dev-bot", MaxRetries: retries})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var waits []time.Duration
	c.http.Transport.(*transport).wait = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
		return ctx.Err()
	}
	return c, &waits
}

func TestTransportRetries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		method    string
		statuses  []int
		headers   map[string]string
		retries   int
		wantErr   error
		wantCalls int64
		wantWait  time.Duration // checked for the first wait when > 0
	}{
		{name: "502 then ok", method: "GET", statuses: []int{502, 502}, wantCalls: 3},
		{name: "429 honours Retry-After", method: "GET", statuses: []int{429}, headers: map[string]string{"Retry-After": "3"}, wantCalls: 2, wantWait: 3 * time.Second},
		{name: "Retry-After capped", method: "GET", statuses: []int{429}, headers: map[string]string{"Retry-After": "3600"}, wantCalls: 2, wantWait: maxRetryAfter},
		{name: "budget exhausted", method: "GET", statuses: []int{500, 500, 500, 500}, retries: 2, wantErr: ErrUnavailable, wantCalls: 3},
		{name: "401 is permanent", method: "GET", statuses: []int{401}, wantErr: ErrUnauthorized, wantCalls: 1},
		{name: "404 not retried", method: "GET", statuses: []int{404}, wantErr: ErrNotFound, wantCalls: 1},
		{name: "POST not retried on 502", method: "POST", statuses: []int{502}, wantErr: ErrUnavailable, wantCalls: 1},
		{name: "POST retried on 503", method: "POST", statuses: []int{503}, wantCalls: 2},
		{name: "POST retried on 429", method: "POST", statuses: []int{429}, wantCalls: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, calls := scripted(t, tc.statuses, tc.headers)
			c, waits := newTestClient(t, srv.URL, tc.retries)
			err := c.do(context.Background(), tc.method, "/user", nil, map[string]int{"a": 1}, nil)
			if tc.wantErr == nil && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got := calls.Load(); got != tc.wantCalls {
				t.Fatalf("calls = %d, want %d", got, tc.wantCalls)
			}
			if tc.wantWait > 0 && (len(*waits) == 0 || (*waits)[0] != tc.wantWait) {
				t.Fatalf("waits = %v, want first %v", *waits, tc.wantWait)
			}
		})
	}
}

func TestUnauthorizedNamesTheUser(t *testing.T) {
	t.Parallel()
	srv, _ := scripted(t, []int{401}, nil)
	c, _ := newTestClient(t, srv.URL, 0)
	_, err := c.Me(context.Background())
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err = %v", err)
	}
	if want := `"dev-bot"`; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %s", err, want)
	}
}

func TestOnRequestSeesEveryAttempt(t *testing.T) {
	t.Parallel()
	srv, _ := scripted(t, []int{502}, nil)
	var mu sync.Mutex
	var seen []int
	c, err := New(Options{URL: srv.URL, OnRequest: func(method, path string, status int, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, status)
	}})
	if err != nil {
		t.Fatal(err)
	}
	c.http.Transport.(*transport).wait = func(context.Context, time.Duration) error { return nil }
	if _, err := c.Me(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != 502 || seen[1] != 200 {
		t.Fatalf("OnRequest saw %v", seen)
	}
	// Me is cached: no further request.
	if _, err := c.Me(context.Background()); err != nil || len(seen) != 2 {
		t.Fatalf("second Me: err %v, requests %v", err, seen)
	}
}

func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	for attempt := range 20 {
		d := backoff(attempt)
		if d <= 0 || d > maxBackoff {
			t.Fatalf("backoff(%d) = %v", attempt, d)
		}
	}
}

func TestRetryAfterParsing(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"5", 5 * time.Second, true},
		{"junk", 0, false},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	}
	for _, tc := range cases {
		got, ok := retryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// spoiled serves bad on the first request and on every one that always
// says, and a good answer otherwise; it counts requests.
func spoiled(t *testing.T, bad http.HandlerFunc, always func(*http.Request) bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if n.Add(1) == 1 || (always != nil && always(r)) {
			bad(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"id":1,"login":"dev-bot"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// A connection that breaks in the middle of a GET's response body is an
// attempt that failed, retried like one that broke before the headers
// (it used to surface as the caller's decoding error, failing the tick).
func TestTransportRetriesABodyCutShort(t *testing.T) {
	t.Parallel()
	srv, n := spoiled(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\":1,")
		_ = buf.Flush()
		_ = conn.Close()
	}, nil)
	c, _ := newTestClient(t, srv.URL, 0)
	var u struct{ Login string }
	if err := c.do(context.Background(), "GET", "/user", nil, nil, &u); err != nil || u.Login != "dev-bot" {
		t.Fatalf("GET after a body cut short: %+v, %v", u, err)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("calls = %d, want 2", got)
	}
}

// JSON that ends mid-value behind an honest Content-Length is retried
// for a repeatable request; for one that is not, the decoding error says
// the forge is at fault (transient), not the caller.
func TestTransportRetriesTruncatedJSON(t *testing.T) {
	t.Parallel()
	srv, n := spoiled(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"id":1,"log`))
	}, func(r *http.Request) bool { return r.Method == http.MethodPost })
	c, _ := newTestClient(t, srv.URL, 0)
	var u struct{ Login string }
	if err := c.do(context.Background(), "GET", "/user", nil, nil, &u); err != nil || u.Login != "dev-bot" {
		t.Fatalf("GET after truncated JSON: %+v, %v", u, err)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("calls = %d, want 2", got)
	}
	if err := c.do(context.Background(), "POST", "/user", nil, map[string]int{"a": 1}, &u); !errors.Is(err, ErrUnavailable) {
		t.Errorf("POST answered with truncated JSON: %v, want ErrUnavailable", err)
	}
}

// A heavy write gets heavyAttemptTimeout per attempt even when the client's
// own attempt timeout is shorter: a forge that takes its time to merge is
// not cut short (and left with a merge pushed but unrecorded).
func TestHeavyWritesOutlastTheAttemptTimeout(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{URL: srv.URL, Token: "tok", User: "dev-bot", MaxRetries: -1,
		HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := c.do(ctx, "POST", "/repos/o/r/pulls/1/merge", nil, map[string]any{}, nil); err == nil {
		t.Fatal("a plain POST outlived the 50ms attempt timeout")
	}
	if err := c.do(heavy(ctx), "POST", "/repos/o/r/pulls/1/merge", nil, map[string]any{}, nil); err != nil {
		t.Fatalf("a heavy POST was cut short: %v", err)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("%d requests, want 2 (no retry of a POST)", got)
	}
}

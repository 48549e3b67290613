package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/logx"
	"github.com/rs/zerolog"
)

// Retry defaults; Options may override the attempt count.
const (
	defaultMaxRetries = 5
	baseBackoff       = 200 * time.Millisecond
	maxBackoff        = 5 * time.Second
	// maxRetryAfter caps a server-provided Retry-After so a bad header
	// cannot stall an agent for long.
	maxRetryAfter = 30 * time.Second
)

type retryKey struct{}

// attemptKey carries a longer per-attempt timeout for one call.
type attemptKey struct{}

// withAttemptTimeout gives the calls on ctx at least d per attempt: work
// the forge must not be cut short in, such as a merge, which Gitea leaves
// pushed but unrecorded when its request ends mid-way.
func withAttemptTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, attemptKey{}, d)
}

// heavyAttemptTimeout is the least time one request gets that makes the
// forge run git and write: a merge (pushed before it is recorded, so a
// request cut short between the two leaves the pull request open with its
// head on the base branch), a new pull request, a formal review. A loaded
// forge takes seconds for them; a short client timeout would only repeat
// them.
const heavyAttemptTimeout = time.Minute

// heavy gives the calls on ctx heavyAttemptTimeout per attempt.
func heavy(ctx context.Context) context.Context { return withAttemptTimeout(ctx, heavyAttemptTimeout) }

// withRetryablePost marks a POST on ctx as safe to repeat (idempotent on the
// server, e.g. adding labels or a merge pinned to a head SHA).
func withRetryablePost(ctx context.Context) context.Context {
	return context.WithValue(ctx, retryKey{}, true)
}

// transport retries transient failures and reports every attempt.
type transport struct {
	next       http.RoundTripper
	maxRetries int
	onRequest  func(method, path string, status int, d time.Duration)
	log        zerolog.Logger
	// attemptTimeout bounds one attempt, including reading its body; the
	// retry budget as a whole is bounded by the caller's context.
	attemptTimeout time.Duration
	// wait blocks for d or until ctx ends; injectable for tests.
	wait func(ctx context.Context, d time.Duration) error
	now  func() time.Time
}

func retryable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions, http.MethodPatch:
		return true
	}
	v, _ := req.Context().Value(retryKey{}).(bool)
	return v
}

// RoundTrip sends req, retrying on 429, 5xx and network errors when the
// method is safe to repeat.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	canRetry := retryable(req)
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 {
			r = req.Clone(ctx)
			if req.Body != nil && req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, fmt.Errorf("rewind body: %w", err)
				}
				r.Body = body
			}
		}
		start := t.now()
		resp, err := t.attempt(r, canRetry)
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		elapsed := t.now().Sub(start)
		if t.onRequest != nil {
			t.onRequest(req.Method, req.URL.Path, status, elapsed)
		}
		t.log.Debug().Str("method", req.Method).Str("path", req.URL.Path).Int("status", status).
			Dur(logx.KeyDuration, elapsed).Int("attempt", attempt).Msg("forge request")
		if ctx.Err() != nil {
			if resp != nil {
				_ = resp.Body.Close()
			}
			return nil, ctx.Err()
		}
		if errors.Is(err, ErrSilent) {
			return nil, err // a one-shot command's patience is spent
		}
		transient := err != nil || status == http.StatusTooManyRequests || status >= 500
		// A POST that got no response at all may or may not have been
		// applied; a 429 or 503 was refused before any work was done.
		if !transient || attempt >= t.maxRetries || (!canRetry && !refusedUnprocessed(err, status)) {
			if err != nil && transient {
				return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			return resp, err
		}
		delay := backoff(attempt)
		if resp != nil {
			if ra, ok := retryAfter(resp.Header.Get("Retry-After"), t.now()); ok {
				delay = ra
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
		}
		if err := t.wait(ctx, delay); err != nil {
			return nil, err
		}
	}
}

// maxBufferedBody bounds the response body of a repeatable request that
// an attempt reads in full.
const maxBufferedBody = 64 << 20

// attempt sends one request under the per-attempt timeout, which stays
// armed until the response body is closed. The body of a repeatable
// request is read within the attempt: a connection that breaks mid-body
// is then an attempt's failure, retried like one that broke before the
// headers, instead of an error in the caller's decoding.
func (t *transport) attempt(r *http.Request, repeatable bool) (*http.Response, error) {
	ctx, cancel := r.Context(), context.CancelFunc(func() {})
	timeout := t.attemptTimeout
	if d, ok := ctx.Value(attemptKey{}).(time.Duration); ok && timeout > 0 && d > timeout {
		timeout = d
	}
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	ctx = context.WithValue(ctx, attemptStart{}, t.now())
	resp, err := t.next.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	if !repeatable {
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBufferedBody))
	if err != nil {
		_ = resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("read response body: %w", err)
	}
	if len(body) < maxBufferedBody {
		_ = resp.Body.Close()
		cancel()
		if resp.StatusCode < 300 && len(body) > 0 && isJSON(resp.Header.Get("Content-Type")) && !json.Valid(body) {
			// A body whose length matched its header but whose JSON ends
			// mid-value is as broken as one cut short: try again.
			return nil, fmt.Errorf("malformed JSON response (%d bytes)", len(body))
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	// Too large to hold: the caller reads the rest, under the deadline.
	resp.Body = &cancelBody{ReadCloser: struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}, cancel: cancel}
	return resp, nil
}

func isJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.TrimSpace(strings.ToLower(mt)) == "application/json"
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// refusedUnprocessed reports failures after which the server certainly did
// not act on the request: an explicit refusal or a failed connect.
func refusedUnprocessed(err error, status int) bool {
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// backoff is capped exponential with full jitter in [d/2, d].
func backoff(attempt int) time.Duration {
	d := baseBackoff << min(attempt, 10)
	if d > maxBackoff {
		d = maxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

// retryAfter parses a Retry-After header in seconds or HTTP-date form.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	if h == "" {
		return 0, false
	}
	var d time.Duration
	if secs, err := strconv.Atoi(h); err == nil {
		d = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(h); err == nil {
		d = at.Sub(now)
	} else {
		return 0, false
	}
	return max(0, min(d, maxRetryAfter)), true
}

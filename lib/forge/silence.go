package forge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// ErrSilent means the forge accepted connections and answered nothing for
// as long as a one-shot command waits (Breaker); wraps ErrUnavailable.
var ErrSilent = fmt.Errorf("%w: the forge does not answer", ErrUnavailable)

// OneShotSilence is how long a one-shot command (run, doctor, graph)
// waits for a forge that accepts connections and never answers.
const OneShotSilence = time.Minute

// Breaker is a RoundTripper for one-shot commands: once a host has
// answered nothing for Limit, counted across every request to it since
// its last answer, the request under way and every later one to it fail
// with ErrSilent, and the client retries none of them. A daemon does not
// use one: it waits a forge out with its backoff.
type Breaker struct {
	next  http.RoundTripper
	limit time.Duration
	now   func() time.Time

	mu sync.Mutex
	// silent is when each host stopped answering; absent while it
	// answers.
	silent map[string]time.Time
}

// NewBreaker wraps next (http.DefaultTransport when nil).
func NewBreaker(next http.RoundTripper, limit time.Duration) *Breaker {
	if next == nil {
		next = http.DefaultTransport
	}
	return &Breaker{next: next, limit: limit, now: time.Now, silent: map[string]time.Time{}}
}

// RoundTrip implements http.RoundTripper.
func (b *Breaker) RoundTrip(req *http.Request) (*http.Response, error) {
	host := req.URL.Host
	b.mu.Lock()
	since := b.silent[host]
	b.mu.Unlock()
	ctx := req.Context()
	if !since.IsZero() {
		left := b.limit - b.now().Sub(since)
		if left <= 0 {
			return nil, b.silence(req)
		}
		// Wait no longer than the silence has left.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, left)
		defer cancel()
		req = req.WithContext(ctx)
	}
	resp, err := b.next.RoundTrip(req)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err == nil:
		delete(b.silent, host)
		return resp, nil
	case !noAnswer(err) || req.Context().Err() == context.Canceled:
		return nil, err
	case b.silent[host].IsZero():
		// The attempt's own timeout ran out: silence starts when it began.
		b.silent[host] = b.now().Add(-attemptAge(req, b.now()))
	}
	if b.now().Sub(b.silent[host]) >= b.limit {
		return nil, b.silence(req)
	}
	return nil, err
}

// silence is the error of a forge that stopped answering.
func (b *Breaker) silence(req *http.Request) error {
	return fmt.Errorf("%w: %s answered nothing for %s", ErrSilent, req.URL.Host, b.limit)
}

// noAnswer says whether err is a request that got no answer in time, as
// opposed to one refused (a connection refused is an answer of sorts).
func noAnswer(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// attemptStart carries when an attempt began, for the breaker.
type attemptStart struct{}

// attemptAge is how long ago req's attempt began; zero when unknown.
func attemptAge(req *http.Request, now time.Time) time.Duration {
	if t, ok := req.Context().Value(attemptStart{}).(time.Time); ok {
		return now.Sub(t)
	}
	return 0
}

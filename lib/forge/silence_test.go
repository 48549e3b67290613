package forge_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// TestBreakerGivesUpOnASilentForge: a forge that accepts connections and
// never answers costs a one-shot command the breaker's limit, retries
// included, and every later call nothing; the error says so.
func TestBreakerGivesUpOnASilentForge(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hang) })
	const limit = time.Second
	c, err := forge.New(forge.Options{URL: srv.URL, Token: "t", HTTPClient: &http.Client{Timeout: 300 * time.Millisecond,
		Transport: forge.NewBreaker(nil, limit)}})
	if err != nil {
		t.Fatal(err)
	}
	repo := c.Repo("o", "r")
	start := time.Now()
	_, err = repo.GetIssue(context.Background(), 1)
	took := time.Since(start)
	if !errors.Is(err, forge.ErrSilent) || !errors.Is(err, forge.ErrUnavailable) {
		t.Fatalf("a silent forge: %v", err)
	}
	// Five retries of 300 ms with backoff would take far longer.
	if took < limit || took > limit+time.Second {
		t.Errorf("gave up after %v, want about %v", took, limit)
	}
	start = time.Now()
	if _, err := repo.GetIssue(context.Background(), 2); !errors.Is(err, forge.ErrSilent) || time.Since(start) > 100*time.Millisecond {
		t.Errorf("the next call: %v after %v", err, time.Since(start))
	}
}

// TestBreakerLetsAnAnsweringForgeBe: answers, errors included, keep the
// breaker closed.
func TestBreakerLetsAnAnsweringForgeBe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"message":"not found"}`, http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	c, err := forge.New(forge.Options{URL: srv.URL, Token: "t", HTTPClient: &http.Client{Transport: forge.NewBreaker(nil, time.Millisecond)}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		time.Sleep(2 * time.Millisecond)
		if _, err := c.Repo("o", "r").GetIssue(context.Background(), 1); errors.Is(err, forge.ErrSilent) || !errors.Is(err, forge.ErrNotFound) {
			t.Fatalf("an answering forge: %v", err)
		}
	}
}

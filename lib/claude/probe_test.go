package claude_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude"
)

// TestProbe: a backend that answers is reachable and asked once per TTL;
// one that is gone is unreachable until it answers again; a backend
// without a base URL is never probed.
func TestProbe(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	var status atomic.Int64
	status.Store(http.StatusNotFound) // an endpoint without /v1/models still answers
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/v1/models" || r.Header.Get("x-api-key") != "" || r.Header.Get("Authorization") != "" {
			t.Errorf("probe %s with credentials %q %q", r.URL.Path, r.Header.Get("x-api-key"), r.Header.Get("Authorization"))
		}
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + l.Addr().String()
	_ = l.Close()

	now := time.Unix(1_700_000_000, 0)
	e := newFakeExec(t, func(o *claude.Options) {
		o.Backends = []claude.Backend{
			{Name: "anthropic", APIKey: "sk-test-key-123456"},
			{Name: "local", BaseURL: srv.URL, APIKey: "sk-local-key-0001"},
			{Name: "gone", BaseURL: gone},
		}
		o.Now = func() time.Time { return now }
	})
	ctx := context.Background()
	if err := e.Probe(ctx, "anthropic"); err != nil {
		t.Errorf("backend without a base URL: %v", err)
	}
	for range 3 {
		if err := e.Probe(ctx, "local"); err != nil {
			t.Fatalf("local: %v", err)
		}
	}
	if hits.Load() != 1 {
		t.Errorf("three probes within the TTL sent %d requests, want 1", hits.Load())
	}
	if err := e.Probe(ctx, "gone"); !errors.Is(err, claude.ErrUnreachable) {
		t.Errorf("gone: %v, want ErrUnreachable", err)
	}
	h := e.Health()
	if len(h) != 2 || h[0].Backend != "gone" || h[0].Reachable || h[0].Error == "" || h[1].Backend != "local" || !h[1].Reachable {
		t.Errorf("health = %+v", h)
	}

	// A server error is unreachable too; after the TTL the probe asks again.
	status.Store(http.StatusBadGateway)
	now = now.Add(claude.ProbeTTL + time.Second)
	if err := e.Probe(ctx, "local"); !errors.Is(err, claude.ErrUnreachable) {
		t.Errorf("local answering 502: %v, want ErrUnreachable", err)
	}
	status.Store(http.StatusOK)
	now = now.Add(claude.ProbeRetry / 2)
	if err := e.Probe(ctx, "local"); err == nil {
		t.Error("a failure was forgotten before ProbeRetry")
	}
	now = now.Add(claude.ProbeRetry)
	if err := e.Probe(ctx, "local"); err != nil {
		t.Errorf("recovered local: %v", err)
	}
	if hits.Load() != 3 {
		t.Errorf("probes sent %d requests, want 3", hits.Load())
	}
	if err := e.Probe(ctx, "nope"); !errors.Is(err, claude.ErrBackend) {
		t.Errorf("unknown backend: %v", err)
	}
}

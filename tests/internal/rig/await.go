package rig

import (
	"net"
	"testing"
	"time"
)

// pollEvery is how often Await looks.
const pollEvery = 200 * time.Millisecond

// Await checks cond until it holds, every 200 ms; it fails t when timeout
// passes first, or at once when abort (if set) reports a reason.
func Await(t testing.TB, what string, timeout time.Duration, abort func() string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	deadline := time.After(timeout)
	for !cond() {
		if abort != nil {
			if why := abort(); why != "" {
				t.Fatalf("waiting for %s: %s", what, why)
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

// FreeAddr returns a loopback address with a port nobody listens on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

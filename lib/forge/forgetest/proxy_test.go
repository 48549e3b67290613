package forgetest_test

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge/forgetest"
)

// jsonBackend serves a JSON list long enough to cut in half, and a slow
// endpoint that answers after a moment.
func jsonBackend(t *testing.T) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"items": strings.Split(strings.Repeat("item ", 200), " ")})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(300 * time.Millisecond)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// fetch GETs url and decodes the JSON answer.
func fetch(c *http.Client, url string) (status int, err error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	var v map[string]any
	return resp.StatusCode, json.Unmarshal(b, &v)
}

func fresh() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

func TestProxyResetAndTruncate(t *testing.T) {
	p := forgetest.NewProxy(t, jsonBackend(t))
	c := fresh()
	p.ResetNext(1)
	status, err := fetch(c, p.URL+"/a")
	if status != http.StatusOK || err == nil || errors.As(err, new(*json.SyntaxError)) {
		t.Errorf("reset mid-body: status %d, error %v; want 200 and a read error", status, err)
	}
	p.TruncateNext(1)
	status, err = fetch(c, p.URL+"/a")
	var se *json.SyntaxError
	if status != http.StatusOK || !(errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF)) {
		t.Errorf("truncated body: status %d, error %v; want 200 and invalid JSON", status, err)
	}
	if _, err := fetch(c, p.URL+"/a"); err != nil {
		t.Errorf("after the faults: %v", err)
	}
	if got := p.Injected(); got[forgetest.InjectedReset] != 1 || got[forgetest.InjectedTruncate] != 1 {
		t.Errorf("injected = %v", got)
	}
}

func TestProxyDownRefusesAndCuts(t *testing.T) {
	p := forgetest.NewProxy(t, jsonBackend(t))
	c := fresh()
	inflight := make(chan error, 1)
	p.Observe(func(n int, r *http.Request) {
		if r.URL.Path == "/slow" {
			go func() { inflight <- p.SetDown(true) }()
		}
	})
	if _, err := fetch(c, p.URL+"/slow"); err == nil {
		t.Error("a request in flight when the forge went down succeeded")
	}
	if err := <-inflight; err != nil {
		t.Fatal(err)
	}
	p.Observe(nil)
	_, err := fetch(c, p.URL+"/a")
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Errorf("while down: %v, want a refused connection", err)
	}
	if err := p.SetDown(false); err != nil {
		t.Fatal(err)
	}
	if _, err := fetch(c, p.URL+"/a"); err != nil {
		t.Errorf("back up: %v", err)
	}
	if n := p.Injected()[forgetest.InjectedOutage]; n != 1 {
		t.Errorf("connections cut by the outage: %d, want 1", n)
	}
}

func TestProxyHung(t *testing.T) {
	p := forgetest.NewProxy(t, jsonBackend(t))
	p.SetHung(true)
	short := &http.Client{Timeout: 200 * time.Millisecond}
	var netErr net.Error
	if _, err := fetch(short, p.URL+"/a"); !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Errorf("hung forge: %v, want a client timeout", err)
	}
	held := make(chan error, 1)
	go func() { _, err := fetch(fresh(), p.URL+"/a"); held <- err }()
	deadline := time.Now().Add(5 * time.Second)
	for p.Injected()[forgetest.InjectedHung] < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	p.SetHung(false)
	if err := <-held; err == nil {
		t.Error("a request held by the hang got an answer when it ended")
	}
	if _, err := fetch(fresh(), p.URL+"/a"); err != nil {
		t.Errorf("after the hang: %v", err)
	}
}

func TestProxyChaosIsSeeded(t *testing.T) {
	backend := jsonBackend(t)
	pattern := func(seed int64) (string, map[string]int) {
		p := forgetest.NewProxy(t, backend)
		p.SetChaos(forgetest.Chaos{Seed: seed, FailRate: 0.3})
		var b strings.Builder
		for range 200 {
			if s, _ := fetch(fresh(), p.URL+"/a"); s == http.StatusInternalServerError {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String(), p.Injected()
	}
	a, inj := pattern(7)
	b, _ := pattern(7)
	c, _ := pattern(8)
	if a != b {
		t.Errorf("one seed, two patterns:\n%s\n%s", a, b)
	}
	if a == c {
		t.Error("two seeds, one pattern")
	}
	if n := strings.Count(a, "x"); n < 40 || n > 80 || inj[forgetest.InjectedStatus] != n {
		t.Errorf("%d of 200 requests failed (%v injected), want about 60", n, inj)
	}
}

func TestProxyChaosMatchAndDelay(t *testing.T) {
	p := forgetest.NewProxy(t, jsonBackend(t))
	var seen atomic.Int64
	p.SetChaos(forgetest.Chaos{Seed: 1, DelayRate: 1, Delay: time.Hour, Match: func(r *http.Request) bool {
		seen.Add(1)
		return strings.HasPrefix(r.URL.Path, "/api/")
	}})
	if _, err := fetch(fresh(), p.URL+"/git"); err != nil {
		t.Errorf("a request the chaos does not match: %v", err)
	}
	short := &http.Client{Timeout: 200 * time.Millisecond}
	if _, err := fetch(short, p.URL+"/api/v1/x"); err == nil {
		t.Error("a request delayed by an hour answered at once")
	}
	p.SetChaos(forgetest.Chaos{})
	if _, err := fetch(fresh(), p.URL+"/api/v1/x"); err != nil || seen.Load() != 2 {
		t.Errorf("chaos off: %v (match asked %d times)", err, seen.Load())
	}
}

package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/metrics"
)

type nopLedger struct{}

func (nopLedger) Append(ledger.Record) error { return nil }

func TestExposition(t *testing.T) {
	reg := metrics.New(func() int { return 2 })
	start := time.Now()
	rec := metrics.Recorder{Next: nopLedger{}, Reg: reg}
	if err := rec.Append(ledger.Record{Project: "p", Role: "dev", Start: start, End: start.Add(time.Minute),
		Reason: ledger.ReasonBlocked, Code: ledger.CodeCIExhausted, CostUSD: 0.5, InputTokens: 10}); err != nil {
		t.Fatal(err)
	}
	reg.ObserveTick("p", "dev", time.Second, nil)
	reg.ObserveWebhook("issues", "accepted")

	forge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	defer forge.Close()
	resp, err := (&http.Client{Transport: reg.RoundTripper(nil)}).Get(forge.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()

	w := httptest.NewRecorder()
	reg.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(w.Body)
	for _, want := range []string{
		`disinto_runs_total{code="ci.exhausted",project="p",reason="blocked",role="dev"} 1`,
		`disinto_cost_usd_total{project="p",role="dev"} 0.5`,
		`disinto_sessions_running 2`,
		`disinto_forge_requests_total{code="418",method="GET"} 1`,
		`disinto_webhook_deliveries_total{event="issues",result="accepted"} 1`,
		`disinto_run_duration_seconds_count{role="dev"} 1`,
		`disinto_ticks_total{project="p",result="ok",role="dev"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

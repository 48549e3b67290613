// Package metrics holds the daemon's Prometheus registry: runs by outcome,
// tick and run durations, sessions running, forge requests, webhook
// deliveries and model cost. Every collector lives on a Registry value; no
// global registry is used.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/disinto/disinto/lib/ledger"
)

// Registry is the daemon's metrics.
type Registry struct {
	reg        *prometheus.Registry
	runs       *prometheus.CounterVec
	runSeconds *prometheus.HistogramVec
	tickSecs   *prometheus.HistogramVec
	ticks      *prometheus.CounterVec
	cost       *prometheus.CounterVec
	tokens     *prometheus.CounterVec
	forge      *prometheus.CounterVec
	hooks      *prometheus.CounterVec
}

// New returns a Registry; running reports how many sessions (background
// work items) are in flight when scraped.
func New(running func() int) *Registry {
	r := &Registry{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disinto_runs_total", Help: "Agent runs by terminal outcome.",
		}, []string{"project", "role", "reason", "code"}),
		runSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "disinto_run_duration_seconds", Help: "Wall time of agent runs.",
			Buckets: []float64{1, 10, 60, 300, 900, 1800, 3600, 7200},
		}, []string{"role"}),
		tickSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "disinto_tick_duration_seconds", Help: "Duration of scheduler ticks (one pass of an agent).",
			Buckets: prometheus.DefBuckets,
		}, []string{"role"}),
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disinto_ticks_total", Help: "Scheduler ticks by result.",
		}, []string{"project", "role", "result"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disinto_cost_usd_total", Help: "Model cost in USD.",
		}, []string{"project", "role"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disinto_tokens_total", Help: "Model tokens.",
		}, []string{"project", "role", "direction"}),
		forge: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disinto_forge_requests_total", Help: "Requests to the forge API by method and status code.",
		}, []string{"method", "code"}),
		hooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disinto_webhook_deliveries_total", Help: "Webhook deliveries by event and result.",
		}, []string{"event", "result"}),
	}
	r.reg.MustRegister(r.runs, r.runSeconds, r.tickSecs, r.ticks, r.cost, r.tokens, r.forge, r.hooks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if running != nil {
		r.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "disinto_sessions_running", Help: "Agent work items (sessions) in flight.",
		}, func() float64 { return float64(running()) }))
	}
	return r
}

// Handler serves /metrics.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg})
}

// ObserveRecord counts one ledger record.
func (r *Registry) ObserveRecord(rec ledger.Record) {
	r.runs.WithLabelValues(rec.Project, rec.Role, string(rec.Reason), string(rec.Code)).Inc()
	r.runSeconds.WithLabelValues(rec.Role).Observe(rec.Wall.Seconds())
	if rec.CostUSD > 0 {
		r.cost.WithLabelValues(rec.Project, rec.Role).Add(rec.CostUSD)
	}
	if rec.InputTokens > 0 {
		r.tokens.WithLabelValues(rec.Project, rec.Role, "input").Add(float64(rec.InputTokens))
	}
	if rec.OutputTokens > 0 {
		r.tokens.WithLabelValues(rec.Project, rec.Role, "output").Add(float64(rec.OutputTokens))
	}
}

// ObserveTick counts one scheduler tick.
func (r *Registry) ObserveTick(project, role string, d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	r.ticks.WithLabelValues(project, role, result).Inc()
	r.tickSecs.WithLabelValues(role).Observe(d.Seconds())
}

// ObserveWebhook counts one webhook delivery.
func (r *Registry) ObserveWebhook(event, result string) {
	r.hooks.WithLabelValues(event, result).Inc()
}

// Recorder wraps a ledger writer so every appended record is also counted.
type Recorder struct {
	Next interface{ Append(ledger.Record) error }
	Reg  *Registry
}

// Append writes rec to Next and counts it when the write succeeded.
func (w Recorder) Append(rec ledger.Record) error {
	if err := w.Next.Append(rec); err != nil {
		return err
	}
	if rec.Wall == 0 {
		rec.Wall = rec.End.Sub(rec.Start)
	}
	w.Reg.ObserveRecord(rec)
	return nil
}

// RoundTripper counts forge requests made through next (nil means
// http.DefaultTransport); wrap the forge client's transport with it.
func (r *Registry) RoundTripper(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper{next: next, reg: r}
}

type roundTripper struct {
	next http.RoundTripper
	reg  *Registry
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	t.reg.forge.WithLabelValues(req.Method, code).Inc()
	return resp, err
}

// Package metrics holds the daemon's Prometheus registry: runs by outcome,
// tick and run durations, the last successful tick of each job, sessions
// running, forge requests and whether each project's forge answers, webhook
// deliveries, model cost, the build, and the supervisor's findings. Every
// collector lives on a Registry value; no global registry is used.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
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
	build      *prometheus.GaugeVec
	forgeUp    *prometheus.GaugeVec
	lastOK     *prometheus.GaugeVec
	findings   *findings
	// gwRequests and gwTokens are the model gateway's: requests by
	// result, tokens as it metered them while runs go on.
	gwRequests *prometheus.CounterVec
	gwTokens   *prometheus.CounterVec
	gwCost     *prometheus.CounterVec
	// egress counts the egress proxy's requests by result.
	egress *prometheus.CounterVec
	// now stamps successful ticks; time.Now.
	now func() time.Time
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
		build: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "disinto_build_info", Help: "The running build: always 1, with its version and commit.",
		}, []string{"version", "commit"}),
		gwRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disinto_gateway_requests_total", Help: "Requests to the model gateway by backend and result.",
		}, []string{"backend", "result"}),
		gwTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disinto_gateway_tokens_total", Help: "Model tokens the gateway metered, by kind.",
		}, []string{"project", "role", "backend", "kind"}),
		gwCost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disinto_gateway_cost_usd_total", Help: "What the metered tokens cost at the price table's prices, in US dollars.",
		}, []string{"project", "role", "backend"}),
		forgeUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "disinto_forge_up", Help: "Whether the project's forge answered its last health probe (1) or not (0).",
		}, []string{"project"}),
		lastOK: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "disinto_job_last_success_timestamp_seconds", Help: "Unix time of the job's last successful tick.",
		}, []string{"project", "role"}),
		findings: &findings{desc: prometheus.NewDesc("disinto_supervisor_findings",
			"Findings of the supervisor's last run, by rule and severity.", []string{"rule", "severity"}, nil)},
		egress: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "disinto_egress_requests_total", Help: "Requests of sessions to the egress proxy by project and result (allowed, denied, refused, failed, unauthenticated).",
		}, []string{"project", "result"}),
		now: time.Now,
	}
	r.reg.MustRegister(r.egress)
	r.reg.MustRegister(r.runs, r.runSeconds, r.tickSecs, r.ticks, r.cost, r.tokens, r.forge, r.hooks,
		r.build, r.forgeUp, r.lastOK, r.findings, r.gwRequests, r.gwTokens, r.gwCost,
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

// ObserveTick counts one scheduler tick; a successful one also stamps the
// job's last success.
func (r *Registry) ObserveTick(project, role string, d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	} else {
		r.lastOK.WithLabelValues(project, role).Set(float64(r.now().UnixNano()) / 1e9)
	}
	r.ticks.WithLabelValues(project, role, result).Inc()
	r.tickSecs.WithLabelValues(role).Observe(d.Seconds())
}

// SetBuildInfo publishes the running build's version and commit (empty
// commit: "unknown").
func (r *Registry) SetBuildInfo(version, commit string) {
	if commit == "" {
		commit = "unknown"
	}
	r.build.Reset()
	r.build.WithLabelValues(version, commit).Set(1)
}

// SetForgeUp records whether the forge of project answered its health
// probe.
func (r *Registry) SetForgeUp(project string, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	r.forgeUp.WithLabelValues(project).Set(v)
}

// Finding is how many findings one supervisor rule made at one severity.
type Finding struct {
	Rule     string
	Severity string
	Count    int
}

// SetFindings replaces the supervisor's findings with those of its latest
// run, at once: a rule that no longer fires drops out instead of keeping
// its old count, and a scrape sees either the old set or the new one.
// Counts of the same rule and severity add up.
func (r *Registry) SetFindings(fs []Finding) {
	sum := map[[2]string]int{}
	for _, f := range fs {
		sum[[2]string{f.Rule, f.Severity}] += f.Count
	}
	r.findings.mu.Lock()
	r.findings.counts = sum
	r.findings.mu.Unlock()
}

// findings is the collector of the supervisor's latest findings.
type findings struct {
	desc *prometheus.Desc

	mu     sync.Mutex
	counts map[[2]string]int
}

// Describe implements prometheus.Collector.
func (f *findings) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }

// Collect implements prometheus.Collector.
func (f *findings) Collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, n := range f.counts {
		ch <- prometheus.MustNewConstMetric(f.desc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
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

// GatewayRequest counts one request to the model gateway: relayed, or
// why it was refused.
func (r *Registry) GatewayRequest(backend, result string) {
	r.gwRequests.WithLabelValues(backend, result).Inc()
}

// GatewayTokens counts tokens the gateway metered for a run of role on
// project, by kind (input, output, cache_read, cache_write).
func (r *Registry) GatewayTokens(project, role, backend string, kinds map[string]int64) {
	for kind, n := range kinds {
		if n > 0 {
			r.gwTokens.WithLabelValues(project, role, backend, kind).Add(float64(n))
		}
	}
}

// GatewayCost counts what the gateway metered for a run of role on
// project cost, at the price table's prices.
func (r *Registry) GatewayCost(project, role, backend string, usd float64) {
	if usd > 0 {
		r.gwCost.WithLabelValues(project, role, backend).Add(usd)
	}
}

// EgressRequest counts one request to the egress proxy: relayed, or why
// not. Hosts are not a label: a session could make up any number.
func (r *Registry) EgressRequest(project, result string) {
	r.egress.WithLabelValues(project, result).Inc()
}

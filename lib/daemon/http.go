package daemon

import (
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/memory"
	"github.com/disinto/disinto/lib/scheduler"
	"github.com/disinto/disinto/lib/trackrecord"
	"github.com/disinto/disinto/lib/vault"
	"github.com/disinto/disinto/lib/webhook"
)

// Report is the JSON of /status and of `disinto status --json`.
type Report struct {
	Daemon *Info `json:"daemon,omitempty"`
	// Replica is the daemon's slot among the agent replicas, their count
	// and the projects it owns; absent for a single replica.
	Replica *ReplicaInfo `json:"replica,omitempty"`
	// Sessions is "isolated" (each model session has a uid of its own)
	// or "unisolated" (they run as the daemon's user and can read its
	// credentials); empty without a running daemon.
	Sessions string                `json:"sessions,omitempty"`
	Projects []ProjectInfo         `json:"projects"`
	Jobs     []scheduler.JobStatus `json:"jobs"`
	Running  []agent.Work          `json:"running"`
	Paused   []agent.Pause         `json:"paused"`
	// Disabled are jobs held back because their bot's token is rejected.
	Disabled []DisabledRole `json:"disabled"`
	// Failing are jobs whose latest runs failed, with the streak.
	Failing []agent.Failing `json:"failing"`
	// Ops are the projects' ops checkouts.
	Ops []OpsInfo `json:"ops,omitempty"`
	// Journals are the bots' journals in their .profile repositories.
	Journals []memory.Status `json:"journals,omitempty"`
	// InFlight are the issues the agents work on; Pending the deferred
	// side effects (mirror pushes) still to be done.
	InFlight []agent.Item    `json:"in_flight"`
	Pending  []agent.Pending `json:"pending,omitempty"`
	// Findings and Actions are the supervisors' open findings and the
	// remediations of their last runs.
	Findings      []agent.Finding `json:"findings,omitempty"`
	Actions       []agent.Action  `json:"actions,omitempty"`
	Unimplemented []string        `json:"unimplemented,omitempty"`
	// NotScheduled says why each role left out of a project's schedule is.
	NotScheduled []string `json:"not_scheduled,omitempty"`
	// Backends are the model backends with a base URL and what their last
	// health probe found.
	Backends     []claude.Health `json:"backends,omitempty"`
	Recent       []ledger.Record `json:"recent"`
	CostTodayUSD float64         `json:"cost_today_usd"`
	// Spend is what the sessions spent per day and role over the last
	// SpendDays days, and per merged pull request.
	Spend *Spend `json:"spend,omitempty"`
	// TrackRecords are the projects' track records: per role and
	// autonomy level, how their pull requests fared (lib/trackrecord).
	TrackRecords []trackrecord.Record `json:"track_records,omitempty"`

	// Egress is "filtered" (isolated sessions reach the model gateway and
	// the egress proxy only) or "unfiltered" (the firewall could not be
	// installed and the operator accepted that); empty for unisolated
	// sessions and without a running daemon.
	Egress string `json:"egress,omitempty"`

	// Formulas are the formulas in force and the overrides refused.
	Formulas []FormulaStatus `json:"formulas,omitempty"`

	// Heartbeats say, for each running tick and piece of work, when it
	// last made progress and which session (process group, deadline) it
	// runs.
	Heartbeats []agent.Heartbeat `json:"heartbeats"`
	// Vault are the vault actions as the dispatchers last saw them.
	Vault []vault.ActionStatus `json:"vault,omitempty"`
	// Edge is the edge's routes and the chat's users, when configured.
	Edge *EdgeStatus `json:"edge,omitempty"`
}

type ProjectInfo struct {
	Name string `json:"name"`
	Repo string `json:"repo"`
	// URL is the repository's page on the forge as people reach it
	// (FORGE_PUBLIC_URL); issues and pull requests are under it.
	URL string `json:"url,omitempty"`
}

// healthz answers health checks; it tells nothing but that the daemon
// serves.
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok\n"))
}

// StatusHandler serves the status listener: /status, /metrics and every page
// for people or tools (new ones go here, never on the hook listener).
func (d *Daemon) StatusHandler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", healthz)
	m.HandleFunc("GET /readyz", d.ready.serve)
	m.Handle("GET /metrics", d.ready.observe(d.Metrics.Handler()))
	m.HandleFunc("GET /status", d.serveStatus)
	m.HandleFunc("GET /{$}", d.serveStatusPage)
	return m
}

// HookHandler serves the hook listener, which the forge reaches: /healthz and
// the HMAC-verified webhook receiver, nothing else.
func (d *Daemon) HookHandler() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", healthz)
	m.HandleFunc("GET /readyz", d.ready.serve)
	if d.Config.WebhookSecret == "" {
		d.log.Warn().Msg("DISINTO_WEBHOOK_SECRET is not set: webhooks disabled, polling only")
		return m
	}
	repos, ops := map[string][]string{}, map[string][]string{}
	for _, p := range d.Config.Projects {
		repos[p.Repo] = append(repos[p.Repo], p.Name)
		if p.OpsRepo != "" && p.OpsRepo != p.Repo {
			ops[p.OpsRepo] = append(ops[p.OpsRepo], p.Name)
		}
	}
	h, err := webhook.New(webhook.Options{
		Secret: []byte(d.Config.WebhookSecret), Projects: repos, Ops: ops,
		Trigger: laneTrigger{sched: d.sched, localDev: d.localDev},
		Log:     d.Logs.For("webhook"), Observe: d.Metrics.ObserveWebhook,
	})
	if err != nil {
		d.log.Error().Err(err).Msg("webhooks disabled")
		return m
	}
	m.Handle("POST "+webhook.Path, h)
	return m
}

// serveStatus answers /status. The report is masked as the bytes that
// leave: ledger records written before masking existed, or text from any
// other source, never show a secret in any escaped form.
func (d *Daemon) serveStatus(w http.ResponseWriter, _ *http.Request) {
	body, err := json.Marshal(d.Status())
	if err != nil {
		d.log.Error().Err(err).Msg("encode /status")
		http.Error(w, "status unavailable", http.StatusInternalServerError)
		return
	}
	masked := []byte(d.Redactor.String(string(body)))
	if !json.Valid(masked) {
		// A mask that cut across the JSON syntax: say nothing rather
		// than something broken or unmasked.
		d.log.Error().Msg("masking secrets broke the /status JSON; not serving it")
		http.Error(w, "status unavailable", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(masked, '\n'))
}

// Status is what the daemon reports on /status: its jobs, the work in
// flight, the gates, checkouts, journals, backends and recent runs.
func (d *Daemon) Status() Report {
	info := Info{Started: d.started}
	rep := Report{Daemon: &info, Replica: d.replica, Jobs: d.sched.Snapshot(), Running: d.Runtime.Running(), Unimplemented: d.unimplemented, NotScheduled: d.unscheduled,
		Sessions: SessionsMode(d.Services.Sandbox), Egress: d.Services.EgressMode()}
	for _, p := range d.Config.Projects {
		rep.Projects = append(rep.Projects, ProjectInfo{Name: p.Name, Repo: p.Repo, URL: p.PublicURL + "/" + p.Repo})
	}
	rep.Paused, _ = d.Enablement.List()
	rep.Disabled, rep.Failing, rep.Ops = d.gates.disabled(), d.failing(), d.ops.list(d.Config.Projects)
	rep.Journals = d.journals.status()
	rep.Heartbeats = d.Runtime.Heartbeats()
	rep.InFlight, rep.Pending = d.holdings()
	rep.Findings, rep.Actions = d.supervision()
	rep.Backends = d.Services.backendHealth()
	rep.Formulas = d.Services.mem.formulas()
	rep.Vault = d.vaults.status()
	rep.Edge = EdgeStatusOf(d.Config.Env)
	rep.Recent, rep.CostTodayUSD = RecentRuns(d.DataDir, time.Now())
	rep.Spend = Spending(d.DataDir, time.Now())
	rep.TrackRecords = TrackRecords(d.DataDir, d.Config)
	return rep
}

// holdings gathers what the agents hold, by project, role and issue.
func (d *Daemon) holdings() ([]agent.Item, []agent.Pending) {
	items, pending := []agent.Item{}, []agent.Pending{}
	for _, r := range d.reporters {
		rep := r.Report()
		items, pending = append(items, rep.Items...), append(pending, rep.Pending...)
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.Project != b.Project {
			return a.Project < b.Project
		}
		if a.Role != b.Role {
			return a.Role < b.Role
		}
		return a.Issue < b.Issue
	})
	return items, pending
}

// supervision collects the supervisors' findings and last actions.
func (d *Daemon) supervision() ([]agent.Finding, []agent.Action) {
	var fs []agent.Finding
	var as []agent.Action
	for _, r := range d.reporters {
		rep := r.Report()
		fs, as = append(fs, rep.Findings...), append(as, rep.Actions...)
	}
	return fs, as
}

// failing lists the jobs whose latest runs failed, but for the disabled
// ones: a job held back by a rejected token runs no more, so its last
// failure is not a streak going on, and it is reported as disabled.
func (d *Daemon) failing() []agent.Failing {
	off := map[string]bool{}
	for _, dr := range d.gates.disabled() {
		off[dr.Project+"/"+dr.Role] = true
	}
	out := []agent.Failing{}
	for _, f := range d.Runtime.Failing() {
		if !off[f.Project+"/"+f.Role] {
			out = append(out, f)
		}
	}
	return out
}

// RecentRuns reads the last runs of the ledger and today's cost.
func RecentRuns(dataDir string, now time.Time) ([]ledger.Record, float64) {
	recs, _, err := ledger.Read(datadir.New(dataDir).Ledger(), ledger.Filter{Since: now.Add(-7 * 24 * time.Hour)})
	if err != nil {
		return nil, 0
	}
	y, m, dd := now.Date()
	midnight := time.Date(y, m, dd, 0, 0, 0, 0, now.Location())
	cost := 0.0
	for _, r := range recs {
		if !r.End.Before(midnight) {
			cost += r.CostUSD
		}
	}
	if len(recs) > 20 {
		recs = recs[len(recs)-20:]
	}
	return recs, cost
}

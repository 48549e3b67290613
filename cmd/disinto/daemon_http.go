package main

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/scheduler"
	"github.com/disinto/disinto/lib/webhook"
)

// statusReport is the JSON of /status and of `disinto status --json`.
type statusReport struct {
	Daemon *daemonInfo `json:"daemon,omitempty"`
	// Sessions is "isolated" (each model session has a uid of its own)
	// or "unisolated" (they run as the daemon's user and can read its
	// credentials); empty without a running daemon.
	Sessions      string                `json:"sessions,omitempty"`
	Projects      []projectInfo         `json:"projects"`
	Jobs          []scheduler.JobStatus `json:"jobs"`
	Running       []agent.Work          `json:"running"`
	Paused        []agent.Pause         `json:"paused"`
	Unimplemented []string              `json:"unimplemented,omitempty"`
	Recent        []ledger.Record       `json:"recent"`
	CostTodayUSD  float64               `json:"cost_today_usd"`
}

type projectInfo struct {
	Name string `json:"name"`
	Repo string `json:"repo"`
}

func (d *daemon) mux() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	m.Handle("GET /metrics", d.metrics.Handler())
	m.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(d.status())
	})
	if d.cfg.WebhookSecret == "" {
		d.log.Warn().Msg("DISINTO_WEBHOOK_SECRET is not set: webhooks disabled, polling only")
		return m
	}
	repos := map[string][]string{}
	for _, p := range d.cfg.Projects {
		repos[p.Repo] = append(repos[p.Repo], p.Name)
	}
	h, err := webhook.New(webhook.Options{
		Secret: []byte(d.cfg.WebhookSecret), Projects: repos, Trigger: d.sched,
		Log: d.logs.For("webhook"), Observe: d.metrics.ObserveWebhook,
	})
	if err != nil {
		d.log.Error().Err(err).Msg("webhooks disabled")
		return m
	}
	m.Handle("POST "+webhook.Path, h)
	return m
}

func (d *daemon) status() statusReport {
	info := daemonInfo{Started: d.started}
	rep := statusReport{Daemon: &info, Jobs: d.sched.Snapshot(), Running: d.rt.Running(), Unimplemented: d.unimplemented,
		Sessions: sessionsMode(d.services.sandbox)}
	for _, p := range d.cfg.Projects {
		rep.Projects = append(rep.Projects, projectInfo{Name: p.Name, Repo: p.Repo})
	}
	rep.Paused, _ = d.enablement.List()
	rep.Recent, rep.CostTodayUSD = recentRuns(d.dataDir, time.Now())
	return rep
}

// recentRuns reads the last runs of the ledger and today's cost.
func recentRuns(dataDir string, now time.Time) ([]ledger.Record, float64) {
	recs, _, err := ledger.Read(ledgerDir(dataDir), ledger.Filter{Since: now.Add(-7 * 24 * time.Hour)})
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

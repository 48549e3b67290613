package main

import (
	"strings"
	"sync"

	"github.com/disinto/disinto/agents/supervisor"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/dockerx"
	"github.com/disinto/disinto/lib/metrics"
	"github.com/disinto/disinto/lib/sandbox"
)

// newSupervisorAgent builds the supervisor of one project, acting as the
// supervisor bot: its incidents go to the project repository, its journal
// to the ops repository (the local state dir when that fails), and it
// watches the engine only when DOCKER_HOST names it (the opt-in socket
// override).
func newSupervisorAgent(d daemon.Deps) (agent.Agent, error) {
	p, s := d.Project, d.Services
	rp, err := d.Parts("run-supervisor", nil)
	if err != nil {
		return nil, err
	}
	o := supervisor.Options{
		Project: p, Forge: rp.Forge,
		Stack:       strings.TrimSpace(d.Config.Env.Get("COMPOSE_PROJECT_NAME")),
		DataDir:     d.DataDir,
		StateDir:    s.Layout.RoleState(p.Name, config.RoleSupervisor),
		LedgerDir:   s.Layout.Ledger(),
		LogDir:      s.Layout.Logs(),
		Maintainers: d.MaintainersOf(rp.Bot),
		Pauser:      supervisor.EnablementPauser{Enablement: daemon.OpenEnablement(s.Layout), Project: p.Name},
		Log:         d.Log,
	}
	// The model sees only unknown anomalies, in a sandbox workspace of
	// its own, read-only by its formula (the live one: overrides reach
	// it) and without a forge token.
	o.Analyst = &supervisor.ModelAnalyst{Claude: s.Claude, Formula: rp.Formula, Live: rp.Live, Project: p.Name,
		Sandbox: s.Sandbox, Key: sandbox.Key("supervisor", p.Name), Model: rp.Settings.Model, Backend: rp.Settings.Backend}
	o.Checkouts = supervisedCheckouts(d, p)
	if d.Runtime != nil {
		o.Heartbeats = supervisor.RuntimeHeartbeats{Runtime: d.Runtime, Project: p.Name}
	}
	if d.Metrics != nil {
		o.Findings = gaugeOf(d.Metrics)
	}
	if r := s.OpsRepo(p.Name); r != nil {
		o.Journal = r
	}
	if e := dockerEngine(d.Config.Env); e != nil {
		o.Engine = e
	}
	return supervisor.New(o)
}

// supervisedCheckouts are the project's clones under the data dir: the
// dev bot's and the review agent's.
func supervisedCheckouts(d daemon.Deps, p *config.Project) []supervisor.Checkout {
	var out []supervisor.Checkout
	if b, err := d.Config.Bot(config.RoleDev); err == nil {
		out = append(out, supervisor.Checkout{Dir: d.Services.Layout.Clone(p.Name, b.User), Primary: p.PrimaryBranch})
	}
	out = append(out, supervisor.Checkout{Dir: d.Services.Layout.ReviewClone(p.Name), Primary: p.PrimaryBranch})
	return out
}

// dockerEngine opens the engine at DOCKER_HOST; nil when it is unset. The
// socket is root-equivalent, so its use is an explicit opt-in (the
// docker-socket override sets DOCKER_HOST), never inferred from a socket
// that happens to exist.
func dockerEngine(env config.Env) *dockerx.Engine {
	host := strings.TrimSpace(env.Get("DOCKER_HOST"))
	if host == "" {
		return nil
	}
	e, err := dockerx.Open(host)
	if err != nil {
		return nil
	}
	return e
}

// findingsGauge feeds disinto_supervisor_findings from every project's
// supervisor: the registry holds one set, so each run replaces its own
// project's part and the union is set.
type findingsGauge struct {
	reg *metrics.Registry
	mu  sync.Mutex
	by  map[string][]metrics.Finding
}

var (
	gaugesMu sync.Mutex
	gauges   = map[*metrics.Registry]*findingsGauge{}
)

// gaugeOf returns the one findings gauge of reg.
func gaugeOf(reg *metrics.Registry) *findingsGauge {
	gaugesMu.Lock()
	defer gaugesMu.Unlock()
	g := gauges[reg]
	if g == nil {
		g = &findingsGauge{reg: reg, by: map[string][]metrics.Finding{}}
		gauges[reg] = g
	}
	return g
}

// SupervisorFindings implements supervisor.FindingsSink.
func (g *findingsGauge) SupervisorFindings(project string, counts map[supervisor.FindingKey]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var fs []metrics.Finding
	for k, n := range counts {
		if n > 0 {
			fs = append(fs, metrics.Finding{Rule: k.Rule, Severity: string(k.Severity), Count: n})
		}
	}
	g.by[project] = fs
	var all []metrics.Finding
	for _, p := range g.by {
		all = append(all, p...)
	}
	g.reg.SetFindings(all)
}

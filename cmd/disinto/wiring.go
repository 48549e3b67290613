package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/memory"
	"github.com/disinto/disinto/lib/metrics"
	"github.com/disinto/disinto/lib/redact"
)

// core is what the daemon and a one-shot run both build, the one way: a
// redactor for everything the process writes, the logs, the ledger, the
// services every agent shares, and the runtime that runs the agents'
// ticks and work. Agents are built from it with newAgent.
type Core struct {
	Config        *config.Config
	DataDir    string
	Redactor   *redact.Redactor
	Logs       *logx.Set
	Ledger     *ledger.Ledger
	Enablement *agent.Enablement
	// metrics counts ticks, outcomes and forge requests for /metrics; nil
	// in a one-shot run.
	Metrics  *metrics.Registry
	Services *Services
	Runtime       *agent.Runtime
	// journals route each run's record to its bot's journal; a daemon
	// registers and drains them, a one-shot run has none.
	journals journals
}

// coreOptions says how the daemon's core and a run's differ.
type coreOptions struct {
	// metrics turns on the counters /metrics serves.
	metrics bool
	// runtimeLog names the log the runtime writes to.
	runtimeLog string
}

// newCore opens and builds the core; on an error, what was opened is
// closed again.
func (a *app) newCore(cfg *config.Config, o coreOptions) (_ *Core, err error) {
	red := redact.New(cfg.Secrets()...)
	lo, err := a.logOptions()
	if err != nil {
		return nil, err
	}
	lo.Dir, lo.Console, lo.Redactor = a.layout().Logs(), a.stderr, red
	logs, err := logx.New(lo)
	if err != nil {
		return nil, err
	}
	c := &Core{Config: cfg, DataDir: a.dataDir, Redactor: red, Logs: logs,
		Enablement: OpenEnablement(a.layout())}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	if c.Ledger, err = ledger.Open(a.layout().Ledger(), ledger.Options{Redactor: red}); err != nil {
		return nil, err
	}
	rto := agent.Options{Enablement: c.Enablement, Log: logs.For(o.runtimeLog), TickTimeout: cfg.Policy.TickTimeout}
	var next agent.Recorder = c.Ledger
	if o.metrics {
		c.Metrics = metrics.New(func() int { return len(c.Runtime.Running()) })
		c.Metrics.SetBuildInfo(version, buildCommit())
		next = metrics.Recorder{Next: c.Ledger, Reg: c.Metrics}
		rto.OnTick = func(p string, r config.Role, dur time.Duration, err error) {
			c.Metrics.ObserveTick(p, string(r), dur, err)
		}
	}
	rto.Ledger = memory.Recorder{Next: next, For: c.journals.journalFor, Redactor: red, Log: logs.For(o.runtimeLog)}
	c.Runtime = agent.New(rto)
	if c.Services, err = newServices(cfg, red, a.dataDir, c.Metrics, a.env, a.allowUnisolated, logs.For("claude")); err != nil {
		return nil, err
	}
	return c, nil
}

// newAgent builds the agent of role for project p with factory.
func (c *Core) NewAgent(factory Factory, p *config.Project, role config.Role) (agent.Agent, error) {
	ag, err := factory(Deps{Config: c.Config, Project: p, Role: role, DataDir: c.DataDir,
		StateDir: datadir.New(c.DataDir).State(p.Name), Log: c.Logs.For(string(role)), Services: c.Services,
		Runtime: c.Runtime, Metrics: c.Metrics})
	if err != nil {
		return nil, fmt.Errorf("%s: %s agent: %w", p.Name, role, err)
	}
	return ag, nil
}

// close closes the ledger and the logs.
func (c *Core) Close() error {
	var errs []error
	if c.Ledger != nil {
		errs = append(errs, c.Ledger.Close())
	}
	return errors.Join(append(errs, c.Logs.Close())...)
}

// logOptions are the console settings of the environment: DISINTO_LOG_LEVEL
// (debug, info, warn, error; --debug wins), DISINTO_LOG_FORMAT (console or
// json) and NO_COLOR (any value: no colours).
func (a *app) logOptions() (logx.Options, error) {
	o := logx.Options{Debug: a.debug, Level: a.getenv("DISINTO_LOG_LEVEL"), NoColor: a.getenv("NO_COLOR") != ""}
	if _, err := logx.ParseLevel(o.Level); err != nil {
		return o, fmt.Errorf("DISINTO_LOG_LEVEL: %w", err)
	}
	json, err := logx.ParseFormat(a.getenv("DISINTO_LOG_FORMAT"))
	if err != nil {
		return o, fmt.Errorf("DISINTO_LOG_FORMAT: %w", err)
	}
	o.JSONConsole = json
	return o, nil
}

package daemon

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
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

// Core is what the daemon and a one-shot run both build, the one way: a
// redactor for everything the process writes, the logs, the ledger, the
// services every agent shares, and the runtime that runs the agents'
// ticks and work. Agents are built from it with newAgent.
type Core struct {
	Config     *config.Config
	DataDir    string
	Redactor   *redact.Redactor
	Logs       *logx.Set
	Ledger     *ledger.Ledger
	Enablement *agent.Enablement
	// metrics counts ticks, outcomes and forge requests for /metrics; nil
	// in a one-shot run.
	Metrics  *metrics.Registry
	Services *Services
	Runtime  *agent.Runtime
	// journals route each run's record to its bot's journal; a daemon
	// registers and drains them, a one-shot run has none.
	journals journals
}

// CoreOptions say where a core lives and how the daemon's core and a
// one-shot run's differ.
type CoreOptions struct {
	// DataDir is the data dir (--data-dir).
	DataDir string
	// Log are the console settings of the logs; their directory, console
	// and redactor are the core's.
	Log logx.Options
	// Console is where the logs go besides their files (stderr).
	Console io.Writer
	// Environ is the process environment the model sessions start from.
	Environ []string
	// AllowUnisolated accepts sessions that run as the daemon's user.
	AllowUnisolated bool
	// ForgeSilence, for a one-shot command, is how long it waits for a
	// forge that accepts connections and answers nothing before it gives
	// up (forge.Breaker); zero (the daemon) waits a forge out.
	ForgeSilence time.Duration
	// Formulas are the formulas built into the binary.
	Formulas fs.FS
	// Metrics turns on the counters /metrics serves; Version and Commit
	// are its build information.
	Metrics         bool
	Version, Commit string
	// RuntimeLog names the log the runtime writes to.
	RuntimeLog string
}

// NewCore opens and builds the core; on an error, what was opened is
// closed again.
func NewCore(cfg *config.Config, o CoreOptions) (_ *Core, err error) {
	red := redact.New(cfg.Secrets()...)
	l := datadir.New(o.DataDir)
	lo := o.Log
	lo.Dir, lo.Console, lo.Redactor = l.Logs(), o.Console, red
	logs, err := logx.New(lo)
	if err != nil {
		return nil, err
	}
	c := &Core{Config: cfg, DataDir: o.DataDir, Redactor: red, Logs: logs,
		Enablement: OpenEnablement(l)}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	if c.Ledger, err = ledger.Open(l.Ledger(), ledger.Options{Redactor: red}); err != nil {
		return nil, err
	}
	rto := agent.Options{Enablement: c.Enablement, Log: logs.For(o.RuntimeLog), TickTimeout: cfg.Policy.TickTimeout}
	var next agent.Recorder = c.Ledger
	if o.Metrics {
		c.Metrics = metrics.New(func() int { return len(c.Runtime.Running()) })
		c.Metrics.SetBuildInfo(o.Version, o.Commit)
		next = metrics.Recorder{Next: c.Ledger, Reg: c.Metrics}
		rto.OnTick = func(p string, r config.Role, dur time.Duration, err error) {
			c.Metrics.ObserveTick(p, string(r), dur, err)
		}
	}
	rto.Ledger = memory.Recorder{Next: next, For: c.journals.journalFor, Redactor: red, Log: logs.For(o.RuntimeLog)}
	c.Runtime = agent.New(rto)
	if c.Services, err = NewServices(cfg, red, c.Metrics, o, logs.For("claude")); err != nil {
		return nil, err
	}
	if err := c.Services.seedDayBudgets(cfg, l.Ledger(), time.Now()); err != nil {
		return nil, err
	}
	return c, nil
}

// NewAgent builds the agent of role for project p with factory.
func (c *Core) NewAgent(factory Factory, p *config.Project, role config.Role) (agent.Agent, error) {
	ag, err := factory(Deps{Config: c.Config, Project: p, Role: role, DataDir: c.DataDir,
		StateDir: datadir.New(c.DataDir).State(p.Name), Log: c.Logs.For(string(role)), Services: c.Services,
		Runtime: c.Runtime, Metrics: c.Metrics})
	if err != nil {
		return nil, fmt.Errorf("%s: %s agent: %w", p.Name, role, err)
	}
	return ag, nil
}

// Close stops the model gateway and closes the ledger and the logs.
func (c *Core) Close() error {
	var errs []error
	if c.Services != nil {
		errs = append(errs, c.Services.Close())
	}
	if c.Ledger != nil {
		errs = append(errs, c.Ledger.Close())
	}
	return errors.Join(append(errs, c.Logs.Close())...)
}

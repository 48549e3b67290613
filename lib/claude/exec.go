package claude

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/gateway"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/redact"
)

// Defaults of the runner's limits.
const (
	DefaultIdleGrace = 30 * time.Second
	DefaultTimeout   = 7200 * time.Second
	DefaultKillGrace = 5 * time.Second
)

// Options configures an Exec.
type Options struct {
	// Bin is the claude executable (CLAUDE_BIN); default "claude", looked
	// up on PATH.
	Bin string
	// Backends are the configured model backends; at least one.
	Backends []Backend
	// DefaultBackend names the backend of invocations that name none;
	// default the first of Backends.
	DefaultBackend string
	// BaseEnv is the daemon's environment as KEY=VALUE (os.Environ() in
	// production). Only allowlisted names pass to the CLI.
	BaseEnv []string
	// AllowEnv replaces DefaultAllowEnv() when non-nil.
	AllowEnv []string
	// DenyEnv names variables that never pass, even if allowlisted or
	// given in Invocation.Env (the vault's secret names).
	DenyEnv []string
	// ConfigDir is CLAUDE_CONFIG_DIR; empty keeps the base env's value.
	// A run in a workspace gets the workspace's own config directory
	// instead, with the login of this one copied in.
	ConfigDir string
	// Settings is the factory's claude settings file (--settings); the
	// settings, hooks and MCP servers of users and repositories are never
	// loaded.
	Settings string
	// IdleGrace is how long the CLI may linger after its result event
	// before its group gets SIGTERM (CLAUDE_IDLE_GRACE).
	IdleGrace time.Duration
	// Timeout is the default hard ceiling per run (CLAUDE_TIMEOUT).
	Timeout time.Duration
	// KillGrace is the delay between SIGTERM and SIGKILL.
	KillGrace time.Duration
	// TranscriptDir receives one redacted stream-json file per run whose
	// invocation has no TranscriptPath; empty disables derived paths.
	TranscriptDir string
	// Redactor masks secrets in transcripts and errors; nil still masks
	// credential-shaped text.
	Redactor *redact.Redactor
	// Logger is the runner's logger.
	Logger zerolog.Logger
	// Observer receives metrics events; may be nil.
	Observer Observer
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Gateway, when set, is the only way sessions reach a model: each run
	// gets a key of its own to it, good only while the run lives, with
	// GatewayURL as its base URL. No credential or base URL of a backend
	// reaches a session, and a result's Usage is what the gateway
	// metered (the CLI's own figures are kept as ReportedUsage).
	Gateway    gateway.Granter
	GatewayURL string
	// EgressProxy, when set, is the egress proxy URL (with the
	// credential) of a project's sessions: their HTTPS_PROXY,
	// HTTP_PROXY and lowercase twins, with NO_PROXY for loopback.
	EgressProxy func(project string) string
}

// ApplyEnv reads CLAUDE_BIN, CLAUDE_IDLE_GRACE and CLAUDE_TIMEOUT (seconds,
// or a Go duration such as "90s") through getenv and sets the
// corresponding fields when the variables are non-empty.
func (o *Options) ApplyEnv(getenv func(string) string) error {
	if v := getenv("CLAUDE_BIN"); v != "" {
		o.Bin = v
	}
	for _, f := range []struct {
		name string
		dst  *time.Duration
	}{{"CLAUDE_IDLE_GRACE", &o.IdleGrace}, {"CLAUDE_TIMEOUT", &o.Timeout}} {
		v := strings.TrimSpace(getenv(f.name))
		if v == "" {
			continue
		}
		d, err := parseSeconds(v)
		if err != nil {
			return fmt.Errorf("%s=%q: %w", f.name, v, err)
		}
		*f.dst = d
	}
	return nil
}

func parseSeconds(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil {
		if n <= 0 {
			return 0, fmt.Errorf("must be positive")
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want seconds or a duration like 90s")
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive")
	}
	return d, nil
}

// Exec runs the real claude CLI. Create it with New.
type Exec struct {
	opts           Options
	bin            string
	env            envBuilder
	backends       map[string]*backendSlot
	defaultBackend string
	now            func() time.Time
}

var _ Runner = (*Exec)(nil)

// New validates opts, fills in defaults and returns a runner.
func New(opts Options) (*Exec, error) {
	if len(opts.Backends) == 0 {
		return nil, fmt.Errorf("claude runner: no backend configured")
	}
	if opts.Bin == "" {
		opts.Bin = "claude"
	}
	if opts.IdleGrace <= 0 {
		opts.IdleGrace = DefaultIdleGrace
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = DefaultKillGrace
	}
	if opts.AllowEnv == nil {
		opts.AllowEnv = DefaultAllowEnv()
	}
	e := &Exec{
		opts:     opts,
		bin:      opts.Bin,
		backends: make(map[string]*backendSlot, len(opts.Backends)),
		now:      opts.Now,
	}
	if e.now == nil {
		e.now = time.Now
	}
	e.env = envBuilder{base: opts.BaseEnv, allow: opts.AllowEnv, denied: make(map[string]bool)}
	for _, n := range opts.DenyEnv {
		e.env.denied[n] = true
	}
	for _, b := range opts.Backends {
		if b.Name == "" {
			return nil, fmt.Errorf("claude runner: backend without a name")
		}
		if _, dup := e.backends[b.Name]; dup {
			return nil, fmt.Errorf("claude runner: backend %q configured twice", b.Name)
		}
		e.backends[b.Name] = &backendSlot{Backend: b, sem: newSemaphore(b.MaxSessions)}
	}
	e.defaultBackend = opts.DefaultBackend
	if e.defaultBackend == "" {
		e.defaultBackend = opts.Backends[0].Name
	}
	if _, ok := e.backends[e.defaultBackend]; !ok {
		return nil, fmt.Errorf("claude runner: default backend %q: %w", e.defaultBackend, ErrBackend)
	}
	return e, nil
}

// Args returns the CLI arguments for inv on backend b. The prompt is not
// among them: it goes to stdin.
func Args(inv Invocation, b Backend, settings string) []string {
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}
	args = append(args, isolationArgs(settings)...)
	if inv.ResumeID != "" {
		args = append(args, "--resume", inv.ResumeID)
	}
	model := inv.Model
	if model == "" {
		model = b.Model
	}
	if model != "" {
		args = append(args, "--model", model)
	}
	if inv.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(inv.MaxTurns))
	}
	if inv.AppendSystemPrompt != "" {
		args = append(args, "--append-system-prompt", inv.AppendSystemPrompt)
	}
	return args
}

// Run implements Runner: it waits for a slot of the invocation's backend,
// runs the CLI and classifies the outcome.
func (e *Exec) Run(ctx context.Context, inv Invocation) (Result, error) {
	log := e.opts.Logger
	if inv.Logger != nil {
		log = *inv.Logger
	}
	if strings.TrimSpace(inv.Prompt) == "" {
		return Result{}, fmt.Errorf("%w: empty prompt", ErrInvalid)
	}
	if inv.Dir == "" {
		return Result{}, fmt.Errorf("%w: no working directory", ErrInvalid)
	}
	b, err := e.backend(inv.Backend)
	if err != nil {
		return Result{}, err
	}
	configDir := e.opts.ConfigDir
	if inv.Workspace != nil {
		configDir = inv.Workspace.ConfigDir()
	}
	var lease gateway.Granted
	if e.opts.Gateway != nil {
		sc := scopeOf(ctx)
		gr := gateway.Grant{Project: sc.Project, Role: sc.Role, Run: inv.Label, Backend: b.Name, Limits: sc.Limits, TZ: sc.TZ}
		if lease, err = e.opts.Gateway.Grant(gr); err != nil {
			if errors.Is(err, gateway.ErrBudget) {
				err = fmt.Errorf("%w: %w", ErrBudgetExhausted, err)
			}
			return Result{}, err
		}
		// The key dies with the run, however it ends.
		defer lease.Close()
	}
	env, err := e.env.build(configDir, b.Backend, inv.Env, inv.Workspace, e.gatewayEnv(lease))
	if err != nil {
		return Result{}, err
	}
	if e.opts.EgressProxy != nil {
		env = withEgressProxy(env, e.opts.EgressProxy(scopeOf(ctx).Project))
	}
	log = log.With().Str(logx.KeyBackend, b.Name).Str(logx.KeyWorktree, inv.Dir).Logger()
	if inv.Label != "" {
		log = log.With().Str(logx.KeyRun, inv.Label).Logger()
	}
	if err := e.acquire(ctx, b, &log); err != nil {
		return Result{}, err
	}
	defer b.sem.release()

	e.observer().SessionStarted(b.Name)
	resume := inv.ResumeID
	if resume == "" {
		resume = "(new)"
	}
	log.Info().Str("resume", resume).Msg("claude run starting")
	res, err := e.runIn(ctx, inv, Args(inv, b.Backend, e.opts.Settings), env, log)
	if lease != nil {
		u := lease.Close()
		res.ReportedUsage, res.Usage = res.Usage, usageOf(u)
		if u.Requests > 0 && u.Unpriced == 0 {
			// Every request priced: the cost is the gateway's too.
			res.ReportedCostUSD, res.CostUSD = res.CostUSD, u.CostUSD
		}
		if r := lease.Refused(); r != nil {
			// Whatever the CLI made of the refusal, the budget ended the run.
			err = fmt.Errorf("%w: %w", ErrBudgetExhausted, r)
		}
	}
	e.observer().SessionEnded(b.Name, res, err)
	// The error itself is the caller's to log; this line records the run.
	log.Info().Str(logx.KeyOutcome, Code(err)).Str(logx.KeySession, res.SessionID).Str("subtype", res.Subtype).Int("exit_code", res.ExitCode).
		Float64("cost_usd", res.CostUSD).Int("turns", res.NumTurns).Int64("tokens", res.Usage.Total()).
		Dur(logx.KeyDuration, res.Duration).Msg("claude run finished")
	return res, err
}

// runIn runs the process, inside its workspace when it has one.
func (e *Exec) runIn(ctx context.Context, inv Invocation, args, env []string, log zerolog.Logger) (Result, error) {
	ws := inv.Workspace
	if ws == nil {
		return e.runProcess(ctx, inv, args, env, log)
	}
	if err := e.prepareWorkspace(ws); err != nil {
		return Result{}, fmt.Errorf("prepare workspace %s: %w", ws.Key(), err)
	}
	res, err := e.runProcess(ctx, inv, args, env, log)
	if ferr := e.finishWorkspace(ws); ferr != nil {
		log.Warn().Str("error", e.redactor().Error(ferr)).Msg("finish workspace")
	}
	return res, err
}

func (e *Exec) redactor() *redact.Redactor { return e.opts.Redactor }

// gatewayEnv is what a run with lease l is given instead of a backend's
// base URL and credentials; nil without a gateway.
func (e *Exec) gatewayEnv(l gateway.Granted) *gatewayEnv {
	if l == nil {
		return nil
	}
	return &gatewayEnv{url: e.opts.GatewayURL, key: l.Token()}
}

// usageOf is the gateway's metered usage as a result's.
func usageOf(u gateway.Usage) Usage {
	return Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheRead: u.CacheRead, CacheCreation: u.CacheCreation}
}

// Package doctor checks a factory's set-up before the daemon runs on it:
// the configuration, the env file, the model credentials and the claude
// CLI, the data directory, and on the forge its version, every bot token
// (identity and scopes), the webhooks and the branch protection. Each
// finding is one line with its fix; a blocking finding means the daemon
// would not work. The offline checks, those of the configuration itself,
// need neither the network nor the claude CLI and are what `disinto config
// check` runs.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/secrets"
)

// Status is how a finding weighs.
type Status string

// Statuses of a finding.
const (
	// OK is a check that passed.
	OK Status = "ok"
	// Warning is something to look at that does not stop the daemon.
	Warning Status = "warning"
	// Blocking is a problem the daemon cannot work with.
	Blocking Status = "blocking"
)

// Check names, one per kind of finding.
const (
	CheckConfig      = "config"
	CheckEnvFile     = "env-file"
	CheckPlaceholder = "placeholder"
	CheckModel       = "model"
	CheckClaude      = "claude"
	CheckDataDir     = "data-dir"
	CheckStatus      = "status-listener"
	CheckForge       = "forge"
	CheckToken       = "token"
	CheckWebhook     = "webhook"
	CheckProtection  = "protection"
	CheckIsolation   = "session-isolation"
)

// Finding is one line of the report: a check, what it looked at, how it
// went and, for anything but OK, how to fix it. Nothing in it is secret.
type Finding struct {
	Check   string `json:"check"`
	Subject string `json:"subject"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

// String is the finding as one line: status, check, subject, message and
// fix.
func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %s", strings.ToUpper(string(f.Status)), f.Check)
	if f.Subject != "" {
		b.WriteString(" " + f.Subject)
	}
	b.WriteString(": " + f.Message)
	if f.Fix != "" {
		b.WriteString("; fix: " + f.Fix)
	}
	return b.String()
}

// Report is every finding of one run, in the order the checks ran.
type Report struct {
	Findings []Finding
}

// add records one finding.
func (r *Report) add(check, subject string, st Status, msg, fix string) {
	r.Findings = append(r.Findings, Finding{Check: check, Subject: subject, Status: st, Message: msg, Fix: fix})
}

// Count returns how many findings have status st.
func (r *Report) Count(st Status) int {
	n := 0
	for _, f := range r.Findings {
		if f.Status == st {
			n++
		}
	}
	return n
}

// Blocking reports whether any finding blocks the daemon.
func (r *Report) Blocking() bool { return r.Count(Blocking) > 0 }

// WriteText writes one line per finding and a summary line.
func (r *Report) WriteText(w io.Writer) error {
	for _, f := range r.Findings {
		if _, err := fmt.Fprintln(w, f.String()); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%d blocking, %d warning(s), %d ok\n", r.Count(Blocking), r.Count(Warning), r.Count(OK))
	return err
}

// WriteJSON writes the report as one JSON object; its list is never null.
func (r *Report) WriteJSON(w io.Writer) error {
	out := struct {
		Blocking int       `json:"blocking"`
		Warnings int       `json:"warnings"`
		Findings []Finding `json:"findings"`
	}{r.Count(Blocking), r.Count(Warning), r.Findings}
	if out.Findings == nil {
		out.Findings = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// Options says what to check.
type Options struct {
	// ProjectsDir and EnvFile are where the configuration lives; Environ
	// is the process environment (KEY=VALUE), which wins over the file.
	ProjectsDir string
	EnvFile     string
	Environ     []string
	// EnvFileExplicit is set when the operator named the env file: then a
	// missing one is a problem, not a set-up that uses the environment.
	EnvFileExplicit bool
	// DataDir is the daemon's data directory.
	DataDir string
	// Offline keeps to the configuration: no forge, no model
	// credentials, no claude CLI.
	Offline bool
	// WebhookURL is where each project's webhook should point; empty
	// means DISINTO_WEBHOOK_URL, and without either the webhooks are not
	// checked.
	WebhookURL string
	// MinFree is the free space the data directory needs; below twice
	// that is a warning. Zero means DefaultMinFree.
	MinFree uint64
	// HTTPClient makes the forge calls; nil means one with a timeout of
	// ForgeTimeout.
	HTTPClient *http.Client
	// ForgeTimeout bounds each forge call; zero means 15 s.
	ForgeTimeout time.Duration
	// RunClaude runs the claude CLI with args and returns its output;
	// nil runs the binary the configuration names.
	RunClaude func(ctx context.Context, bin string, args ...string) (string, error)
	// AllowUnisolated says the operator accepts sessions the daemon cannot
	// confine (--allow-unisolated-sessions): what is missing for their
	// confinement is then a warning.
	AllowUnisolated bool
	// Euid and ProbeFirewall stand in for the process's effective uid and
	// the installation of a probe firewall; nil means the real ones.
	Euid          func() int
	ProbeFirewall func() error
}

// DefaultMinFree is the free space below which the data directory blocks:
// clones, worktrees and session logs need room.
const DefaultMinFree = 512 << 20

// Run performs the checks and returns every finding. It fails only for
// reasons that are not findings (a cancelled context).
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.MinFree == 0 {
		o.MinFree = DefaultMinFree
	}
	if o.ForgeTimeout == 0 {
		o.ForgeTimeout = 15 * time.Second
	}
	if o.HTTPClient == nil {
		// A host that answers nothing costs the run its patience once,
		// not every check's timeout.
		o.HTTPClient = &http.Client{Timeout: o.ForgeTimeout, Transport: forge.NewBreaker(nil, forge.OneShotSilence)}
	}
	if o.RunClaude == nil {
		o.RunClaude = runCommand
	}
	r := &Report{}
	fileEnv := checkEnvFile(r, o)
	cfg := checkConfig(r, o)
	env := mergedEnv(fileEnv, o.Environ)
	if cfg != nil {
		env = cfg.Env
		checkSealedEnv(r, o, cfg)
	}
	checkPlaceholders(r, env)
	checkStatusListener(r, env)
	checkDataDir(r, o)
	if o.Offline {
		return r, ctx.Err()
	}
	checkIsolation(r, o)
	checkModel(r, env)
	bin := env.Get("CLAUDE_BIN")
	if cfg != nil {
		bin = cfg.Claude.Bin
	}
	checkClaude(ctx, r, o, bin)
	if cfg == nil {
		r.add(CheckForge, "", Blocking, "forge checks not run: the configuration has problems", "fix the configuration problems above, then run disinto doctor again")
		return r, ctx.Err()
	}
	checkForges(ctx, r, o, cfg)
	checkEdge(ctx, r, o, cfg)
	return r, ctx.Err()
}

// mergedEnv overlays environ on the env file's values.
func mergedEnv(file map[string]string, environ []string) config.Env {
	vals := map[string]string{}
	for k, v := range file {
		vals[k] = v
	}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vals[k] = v
		}
	}
	return config.NewEnv(vals)
}

// checkConfig loads the configuration; each problem is one blocking
// finding, with the fix its finder gave.
func checkConfig(r *Report, o Options) *config.Config {
	cfg, err := config.LoadWith(o.ProjectsDir, o.EnvFile, o.Environ, secrets.Open(o.DataDir).DecryptFile)
	if err == nil {
		names := make([]string, len(cfg.Projects))
		for i, p := range cfg.Projects {
			names[i] = p.Name
		}
		r.add(CheckConfig, o.ProjectsDir, OK, fmt.Sprintf("%d project(s) (%s), roles %s", len(cfg.Projects), strings.Join(names, ", "), joinRoles(cfg.Roles)), "")
		return cfg
	}
	var ps config.Problems
	if !asProblems(err, &ps) {
		r.add(CheckConfig, o.ProjectsDir, Blocking, err.Error(), "make the file readable")
		return nil
	}
	for _, p := range ps {
		fix := p.Fix
		if fix == "" {
			fix = "edit the file as the message says (projects/example.toml.example documents every key)"
		}
		r.add(CheckConfig, "", Blocking, p.Error(), fix)
	}
	return nil
}

// joinRoles lists roles comma-separated.
func joinRoles(rs []config.Role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ",")
}

// runCommand runs bin with args and returns its combined output.
func runCommand(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

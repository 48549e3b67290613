package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/sandbox"
)

// Analyst is the model, asked about an anomaly no rule explains. It reads
// and proposes; code decides.
type Analyst interface {
	Analyse(ctx context.Context, snap *Snapshot, anomaly Finding) (Verdict, error)
}

// Verdict is the model's structured answer, validated by code.
type Verdict struct {
	Summary  string           `json:"summary"`
	Findings []VerdictFinding `json:"findings"`
	Incident *VerdictIncident `json:"incident,omitempty"`
}

// VerdictFinding is one finding the model reports.
type VerdictFinding struct {
	Priority       string `json:"priority"`
	Finding        string `json:"finding"`
	Evidence       string `json:"evidence"`
	ProposedAction string `json:"proposed_action"`
	NeedsHuman     bool   `json:"needs_human"`
}

// VerdictIncident is the incident text the model drafts.
type VerdictIncident struct {
	Fingerprint string `json:"fingerprint"`
	Title       string `json:"title"`
	Body        string `json:"body"`
}

// ErrVerdict means the model's report is not a valid verdict.
var ErrVerdict = errors.New("invalid supervisor verdict")

// Verdict bounds.
const (
	maxVerdictBytes = 64 << 10
	maxSummary      = 2000
	maxFindings     = 20
)

// ParseVerdict decodes and validates the model's report strictly: known
// fields only, priorities P0–P4, bounded text.
func ParseVerdict(data []byte) (Verdict, error) {
	if len(data) > maxVerdictBytes {
		return Verdict{}, fmt.Errorf("%w: %d bytes (limit %d)", ErrVerdict, len(data), maxVerdictBytes)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var v Verdict
	if err := dec.Decode(&v); err != nil {
		return Verdict{}, fmt.Errorf("%w: %w", ErrVerdict, err)
	}
	switch {
	case strings.TrimSpace(v.Summary) == "":
		return Verdict{}, fmt.Errorf("%w: summary is empty", ErrVerdict)
	case len(v.Summary) > maxSummary:
		return Verdict{}, fmt.Errorf("%w: summary longer than %d bytes", ErrVerdict, maxSummary)
	case len(v.Findings) > maxFindings:
		return Verdict{}, fmt.Errorf("%w: %d findings (limit %d)", ErrVerdict, len(v.Findings), maxFindings)
	}
	for i, f := range v.Findings {
		if len(f.Priority) != 2 || f.Priority[0] != 'P' || f.Priority[1] < '0' || f.Priority[1] > '4' {
			return Verdict{}, fmt.Errorf("%w: findings[%d].priority %q is not P0..P4", ErrVerdict, i, f.Priority)
		}
		if strings.TrimSpace(f.Finding) == "" {
			return Verdict{}, fmt.Errorf("%w: findings[%d].finding is empty", ErrVerdict, i)
		}
	}
	if in := v.Incident; in != nil && slug(in.Fingerprint) != in.Fingerprint {
		return Verdict{}, fmt.Errorf("%w: incident.fingerprint %q is not kebab-case", ErrVerdict, in.Fingerprint)
	}
	return v, nil
}

// analyse asks the model about an anomaly and folds its validated verdict
// into the finding's evidence. The model proposes; nothing it proposes is
// executed.
func (p *pass) analyse(fd *Finding) {
	v, err := p.a.o.Analyst.Analyse(p.ctx, p.snap, *fd)
	if err != nil {
		p.act(fd, "model analysis failed", 0, err)
		return
	}
	p.analysis = v.Summary
	var b strings.Builder
	b.WriteString(fd.evidence)
	b.WriteString("\n\n**Model analysis** (read-only; nothing was executed):\n\n" + v.Summary + "\n")
	for _, f := range v.Findings {
		fmt.Fprintf(&b, "- [%s] %s — proposed: %s\n", f.Priority, f.Finding, f.ProposedAction)
	}
	fd.evidence = b.String()
	p.act(fd, "asked the model about "+fd.Rule, 0, nil)
}

// ModelAnalyst runs the run-supervisor formula in one bounded, read-only
// session (spec 60 §6.5): at most MaxTurns turns and Timeout, in a
// sandbox workspace that holds no credential and no data-dir state (the
// snapshot is in the prompt), and its report is a Verdict.
type ModelAnalyst struct {
	Claude claude.Runner
	// Formula is the run-supervisor formula; Live, when set, the formula
	// in force, resolved at each analysis (.profile and ops repository
	// overrides), Formula its fallback.
	Formula *formula.Formula
	Live    formulaagent.LiveFormula
	Project string
	// Sandbox and Key give the session its workspace; without a Sandbox
	// the session runs in Dir (tests).
	Sandbox *sandbox.Sandbox
	Key     string
	Dir     string
	Model   string
	Backend string
	// MaxTurns and Timeout are capped at the defaults.
	MaxTurns int
	Timeout  time.Duration
}

// Model run bounds.
const (
	DefaultAnalystTurns   = 30
	DefaultAnalystTimeout = 10 * time.Minute
)

// Analyse implements Analyst.
func (m *ModelAnalyst) Analyse(ctx context.Context, snap *Snapshot, anomaly Finding) (Verdict, error) {
	b := claude.Bounds{Model: m.Model, Backend: m.Backend, MaxTurns: m.MaxTurns, Timeout: m.Timeout}.
		Capped(claude.Bounds{MaxTurns: DefaultAnalystTurns, Timeout: DefaultAnalystTimeout})
	spec := claude.Spec{Label: "supervisor-analysis", Bounds: b, Dir: m.Dir}
	report := filepath.Join(m.Dir, "report.json")
	if m.Sandbox != nil {
		ws, err := m.Sandbox.Workspace(m.Key)
		if err != nil {
			return Verdict{}, fmt.Errorf("supervisor analysis: %w", err)
		}
		spec.Workspace, spec.Dir, report = ws, ws.Home(), ws.Out("report.json")
	} else if err := os.MkdirAll(m.Dir, 0o700); err != nil {
		return Verdict{}, err
	}
	_ = os.Remove(report)
	data, _ := json.MarshalIndent(snap, "", " ")
	f := formulaagent.Formulas{Formula: m.Formula, Live: m.Live}.Resolve(ctx)
	prompt, err := formula.Render(f, formula.RenderInput{Role: "supervisor", Project: m.Project,
		Vars: map[string]string{"project": m.Project, "report_file": report, "max_turns": strconv.Itoa(b.MaxTurns)},
		Blocks: []formula.Block{
			{Title: "Snapshot", Body: string(data), Untrusted: true},
			{Title: "Anomaly", Body: anomaly.Summary + "\n" + anomaly.evidence, Untrusted: true},
		}})
	if err != nil {
		return Verdict{}, fmt.Errorf("render run-supervisor: %w", err)
	}
	spec.Prompt = prompt
	if _, err := claude.Call(ctx, m.Claude, spec); err != nil && !errors.Is(err, claude.ErrMaxTurns) {
		return Verdict{}, fmt.Errorf("supervisor analysis: %w", err)
	}
	out, _, err := atomicfile.ReadUntrusted(report, maxVerdictBytes)
	if err != nil {
		return Verdict{}, fmt.Errorf("%w: no report: %w", ErrVerdict, err)
	}
	return ParseVerdict(out)
}

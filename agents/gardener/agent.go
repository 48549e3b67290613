// Package gardener is the agent that keeps the backlog workable: the
// quality gate, starving blockers, tech-debt promotion, dust bundling,
// bug-report detection, closing parents whose sub-issues are done, and
// AGENTS.md files true to the code (spec 30).
//
// A run decides in Go whatever can be computed (over fully paginated
// issues) and asks one bounded session only for judgement: dust or ore,
// bug or feature, the text that enriches an issue, the prose of AGENTS.md.
// Every tracker change becomes an action of a typed manifest that travels
// in the gardener's pull request with the AGENTS.md edits; the dev bot
// merges the approved pull request, and the next run applies the manifest
// read from the merge commit, exactly once.
package gardener

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/text"
)

// forgeAPI is what the gardener does on the forge, as its bot.
type forgeAPI interface {
	applyForge
	formulaagent.WatchForge
	formulaagent.PublishForge
	Me(ctx context.Context) (forge.User, error)
	ListPulls(ctx context.Context, state forge.State) ([]forge.PullRequest, error)
	ListTree(ctx context.Context, ref string) ([]string, error)
	ListReviews(ctx context.Context, n int64) ([]forge.Review, error)
	ClosePull(ctx context.Context, n int64) error
	DeleteBranch(ctx context.Context, name string) error
}

var _ forgeAPI = (*forge.RepoClient)(nil)

// FormulaName is the gardener's formula (formulas/run-gardener.toml).
const FormulaName = "run-gardener"

// PR naming (spec 30 §8).
const (
	Title         = "chore: gardener housekeeping"
	role          = "gardener"
	branchPrefix  = "chore/" + role + "-"
	maxProposals  = 256 << 10
	maxCandidates = 40
)

// Options configures an Agent.
type Options struct {
	Project string
	Primary string
	// Forge acts as the gardener bot; Runner checks out, runs the session
	// and publishes as it.
	Forge  forgeAPI
	Runner *formulaagent.Runner
	// Formula is the gardener formula; LiveFormula, when set, returns the
	// formula in force now (overrides).
	Formula     *formula.Formula
	LiveFormula func() *formula.Formula
	Lessons     func(context.Context) string
	// StateDir holds the lock, the watermark, the dust accumulator and
	// the applied manifests.
	StateDir string
	// ReviewBot is the review agent's login: its change request on the
	// head of the open gardener pull request closes it, and the next run
	// decides afresh. Empty: nobody's review closes it.
	ReviewBot string
	Redactor  *redact.Redactor
	Hooks     Hooks
	Now       func() time.Time
	Log       zerolog.Logger
}

// Agent is the gardener of one project.
type Agent struct {
	o      Options
	watch  formulaagent.Watch
	dust   dustFile
	judged judgedFile

	mu   sync.Mutex
	self forge.Self
	last lastRun
}

// lastRun is what status shows: the open gardener pull request the last
// run left, since it was first seen.
type lastRun struct {
	PR    int64
	Since time.Time
}

var (
	_ agent.Agent    = (*Agent)(nil)
	_ agent.Reporter = (*Agent)(nil)
)

// New returns the gardener of o.Project.
func New(o Options) *Agent {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Primary == "" {
		o.Primary = "main"
	}
	return &Agent{o: o,
		watch:  formulaagent.Watch{Forge: o.Forge, Primary: o.Primary, File: filepath.Join(o.StateDir, "watch.json")},
		dust:   dustFile{path: filepath.Join(o.StateDir, "dust.jsonl")},
		judged: judgedFile{path: filepath.Join(o.StateDir, "judged.json")}}
}

func (a *Agent) formula() *formula.Formula { return formula.InForce(a.o.LiveFormula, a.o.Formula) }

// identity returns the gardener bot's login.
func (a *Agent) identity(ctx context.Context) (string, error) { return a.self.Login(ctx, a.o.Forge.Me) }

func (a *Agent) applier(me string) *applier {
	return &applier{f: a.o.Forge, dir: filepath.Join(a.o.StateDir, "applied"), me: me, hooks: a.o.Hooks, log: a.o.Log}
}

// Report implements agent.Reporter: the gardener pull request whose
// manifest waits for its review and merge (the outcome of each run is in
// the ledger, its schedule in the scheduler's report).
func (a *Agent) Report() agent.Report {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last.PR == 0 {
		return agent.Report{}
	}
	return agent.Report{Items: []agent.Item{{Project: a.o.Project, Role: role, PR: a.last.PR,
		Stage: "manifest awaiting review and merge", Started: a.last.Since}}}
}

func (a *Agent) setLast(pr int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	since := a.o.Now()
	if pr != 0 && pr == a.last.PR {
		since = a.last.Since
	}
	a.last = lastRun{PR: pr, Since: since}
}

// Tick is one gardener run: under the project's lock, skip when nothing
// changed; apply the manifests of merged gardener pull requests; then,
// unless a gardener pull request is still open, groom and propose.
func (a *Agent) Tick(ctx context.Context, run *agent.Run) error {
	unlock, err := formulaagent.Lock(a.o.StateDir)
	if errors.Is(err, formulaagent.ErrBusy) {
		log := run.Logger()
		log.Info().Str("reason", err.Error()).Msg("gardener run skipped")
		return nil
	}
	if err != nil {
		return err
	}
	defer unlock()
	obs, err := a.watch.Changed(ctx, a.o.Now())
	if err != nil {
		return err
	}
	if obs.Why == "" {
		log := run.Logger()
		log.Debug().Msg("nothing changed since the last gardener run")
		return nil
	}
	me, err := a.identity(ctx)
	if err != nil {
		return err
	}
	log := run.Logger().With().Str("why", obs.Why).Logger()
	res, err := a.run(ctx, me, obs.Head, log)
	if err != nil {
		return err
	}
	a.setLast(max(res.PR, res.Pending))
	if err := a.dustSave(res); err != nil {
		return err
	}
	timer := res.timer
	if res.PR > 0 || res.Pending > 0 {
		// A pull request waits for its review: the next run looks at it
		// (a rejection withdraws it) even when nothing else changed.
		timer = a.o.Now()
	}
	if err := a.watch.Save(obs, timer); err != nil {
		return err
	}
	return run.Record(res.record())
}

// dustSave keeps the accumulator the run left.
func (a *Agent) dustSave(res *result) error {
	if !res.dustKept {
		return nil
	}
	return a.dust.save(res.dust)
}

// pending returns the open gardener pull request, if any: one at a time,
// so a run never decides again what an unmerged manifest holds.
func pending(pulls []forge.PullRequest, me string) (forge.PullRequest, bool) {
	for _, p := range pulls {
		if strings.HasPrefix(p.Head, branchPrefix) && strings.EqualFold(p.Author, me) && !p.FromFork {
			return p, true
		}
	}
	return forge.PullRequest{}, false
}

// ours reports whether a closed pull request is a merged gardener one
// (its head branch may be gone after the merge; the title and author
// stand).
func ours(p forge.PullRequest, me string) bool {
	return p.Merged && p.MergedSHA != "" && strings.EqualFold(p.Author, me) && !p.FromFork &&
		(strings.HasPrefix(p.Head, branchPrefix) || p.Title == Title)
}

// reconcile applies the manifest of every merged gardener pull request not
// yet applied, oldest first.
func (a *Agent) reconcile(ctx context.Context, me string, log zerolog.Logger) (applied int, err error) {
	closed, err := a.o.Forge.ListPulls(ctx, forge.StateClosed)
	if err != nil {
		return 0, fmt.Errorf("list closed pulls: %w", err)
	}
	ap := a.applier(me)
	for i := len(closed) - 1; i >= 0; i-- {
		p := closed[i]
		if !ours(p, me) || ap.done(p.MergedSHA) {
			continue
		}
		if n, err := a.applyPull(ctx, ap, p, log); err != nil {
			return applied, err
		} else if n {
			applied++
		}
	}
	return applied, nil
}

// applyPull applies the manifest of one merged pull request, read from
// its merge commit.
func (a *Agent) applyPull(ctx context.Context, ap *applier, p forge.PullRequest, log zerolog.Logger) (bool, error) {
	log = log.With().Int64("pr", p.Number).Str("merge", text.ShortSHA(p.MergedSHA)).Logger()
	rec, err := ap.load(p.MergedSHA, p.Number)
	if err != nil {
		return false, err
	}
	if len(rec.Actions) == 0 {
		// No record here: a lost state dir finds the report on the PR.
		if ok, err := ap.reported(ctx, p.Number, p.MergedSHA); err != nil {
			return false, err
		} else if ok {
			return false, ap.markDone(p.MergedSHA, p.Number)
		}
	}
	f, err := a.o.Forge.GetFile(ctx, ManifestFile, p.MergedSHA)
	var m Manifest
	switch {
	case err != nil && isNotFound(err):
		m = Manifest{}
	case err != nil:
		return false, err
	default:
		if m, err = ParseManifest(f.Content); err != nil {
			log.Warn().Str("error", err.Error()).Msg("merged manifest refused; nothing of it is applied")
			m = Manifest{}
		}
	}
	if _, err := ap.Apply(ctx, p.Number, p.MergedSHA, m); err != nil {
		return false, fmt.Errorf("apply the manifest of pull request #%d: %w", p.Number, err)
	}
	log.Info().Int("actions", len(m)).Msg("manifest applied")
	return true, nil
}

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
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/text"
)

// forgeAPI is what the gardener does on the forge, as its bot.
type forgeAPI interface {
	applyForge
	ListPulls(ctx context.Context, state forge.State) ([]forge.PullRequest, error)
	ListTree(ctx context.Context, ref string) ([]string, error)
	ListReviews(ctx context.Context, n int64) ([]forge.Review, error)
	ClosePull(ctx context.Context, n int64) error
	DeleteBranch(ctx context.Context, name string) error
	// Writers and LabelEvents tell maintainers' issues from outsiders'
	// (provenance.Forge; origin.go).
	Writers(ctx context.Context) ([]forge.User, error)
	LabelEvents(ctx context.Context, n int64) ([]forge.LabelEvent, error)
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
	// Forge acts as the gardener bot; Driver is the role's runtime: its
	// tick, formula, session and pull requests, as the same bot, and its
	// state dir, which holds the dust accumulator and the applied
	// manifests besides the lock and the watermark.
	Forge  forgeAPI
	Driver *formulaagent.Driver
	// ReviewBot is the review agent's login: its change request on the
	// head of the open gardener pull request closes it, and the next run
	// decides afresh. Empty: nobody's review closes it.
	ReviewBot string
	Redactor  *redact.Redactor
	Hooks     Hooks
	Log       zerolog.Logger
}

// Agent is the gardener of one project.
type Agent struct {
	o      Options
	now    func() time.Time
	dust   dustFile
	judged judgedFile

	mu   sync.Mutex
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
	if o.Primary == "" {
		o.Primary = "main"
	}
	return &Agent{o: o, now: o.Driver.Now,
		dust:   dustFile{path: o.Driver.StatePath("dust.jsonl")},
		judged: judgedFile{path: o.Driver.StatePath("judged.json")}}
}

func (a *Agent) applier(me string) *applier {
	return &applier{f: a.o.Forge, dir: a.o.Driver.StatePath("applied"), me: me, hooks: a.o.Hooks, log: a.o.Log}
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
	since := a.now()
	if pr != 0 && pr == a.last.PR {
		since = a.last.Since
	}
	a.last = lastRun{PR: pr, Since: since}
}

// Tick is one gardener run (formulaagent.Driver.Tick): skip when
// nothing changed; apply the manifests of merged gardener pull requests;
// then, unless a gardener pull request is still open, groom and propose.
func (a *Agent) Tick(ctx context.Context, run *agent.Run) error { return a.o.Driver.Tick(ctx, run, a) }

// Begin implements formulaagent.Role: the gardener watches only the
// primary branch, the issues and its timers.
func (a *Agent) Begin(_ context.Context, r *formulaagent.Run) (formulaagent.Body, string, error) {
	if r.Obs.Why == "" {
		return nil, "", nil
	}
	return a.body, r.Obs.Why, nil
}

// body is a run that goes ahead.
func (a *Agent) body(ctx context.Context, r *formulaagent.Run) (formulaagent.Outcome, error) {
	res, err := a.run(ctx, r.Me, r.Obs.Head, r.Log)
	if err != nil {
		return formulaagent.Outcome{}, err
	}
	a.setLast(max(res.PR, res.Pending))
	if err := a.dustSave(res); err != nil {
		return formulaagent.Outcome{}, err
	}
	timer := res.timer
	if res.PR > 0 || res.Pending > 0 {
		// A pull request waits for its review: the next run looks at it
		// (a rejection withdraws it) even when nothing else changed.
		timer = a.now()
	}
	return formulaagent.Outcome{Timer: timer, Record: res.record}, nil
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

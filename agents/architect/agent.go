// Package architect turns vision issues into sprints (spec 50 §3): for
// each open vision issue it pitches a sprint as a pull request on the ops
// repository adding sprints/<slug>.md, and it drives every sprint pull
// request through an explicit state machine (machine.go): a human
// accepts or rejects the pitch, the architect asks the design questions
// and reads the answers in the pull request's comments, and a human
// merges the final sprint, whose sub-issues the filer then files.
//
// The orchestrator decides and acts; the model only judges. Each session
// runs in an empty scratch directory of the sprint's own sandbox
// workspace, with no forge credential and no nudge, and writes the
// complete sprint document and its comments to its outbox; the
// orchestrator validates the document (lib/sprint), commits it to the
// sprint branch as the one source of truth, mirrors it into the pull
// request body and posts the comments. Decisions count only from the
// allowed humans, never from a bot, and each is acted on once, by the id
// of its comment or review, recorded both locally and in a hidden marker
// of the architect's acknowledgement.
package architect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/redact"
)

// FormulaName is the architect's formula (formulas/run-architect.toml).
const FormulaName = "run-architect"

const role = "architect"

// DefaultMaxOpen bounds the open sprint pull requests (spec 50 §3.9).
const DefaultMaxOpen = 3

// fullRunEvery bounds the time between two complete runs: what the cheap
// check cannot see (a human deleting the architect's rejection note on a
// vision issue moves nothing the forge reports) is seen within it.
const fullRunEvery = 24 * time.Hour

// ProjectForge is what the architect reads of the project repository and
// writes there (comments and labels on vision issues), as its bot, which
// is read-only on the code.
type ProjectForge interface {
	formulaagent.WatchForge
	Me(ctx context.Context) (forge.User, error)
	GetIssue(ctx context.Context, n int64) (forge.Issue, error)
	GetFile(ctx context.Context, path, ref string) (forge.File, error)
	ListTree(ctx context.Context, ref string) ([]string, error)
	ListComments(ctx context.Context, n int64) ([]forge.Comment, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
	AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	RemoveLabels(ctx context.Context, n int64, names ...forge.LabelName) error
}

// Labeler adds and removes labels of an issue of the project.
type Labeler interface {
	AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error
	RemoveLabels(ctx context.Context, n int64, names ...forge.LabelName) error
}

// OpsForge is what the architect does on the ops repository, as its bot.
type OpsForge interface {
	ops.PullRequests
	GetBranch(ctx context.Context, name string) (forge.Branch, error)
	DeleteBranch(ctx context.Context, name string) error
	GetFile(ctx context.Context, path, ref string) (forge.File, error)
	PutFile(ctx context.Context, f forge.FileChange) (string, error)
	ListTree(ctx context.Context, ref string) ([]string, error)
	ListComments(ctx context.Context, n int64) ([]forge.Comment, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
	ListReviews(ctx context.Context, n int64) ([]forge.Review, error)
	EditIssue(ctx context.Context, n int64, e forge.IssueEdit) (forge.Issue, error)
	CreateStatus(ctx context.Context, sha string, s forge.CommitStatus) error
}

var (
	_ ProjectForge = (*forge.RepoClient)(nil)
	_ OpsForge     = (*forge.RepoClient)(nil)
)

// Proposer opens a pull request on the ops repository (*ops.Repo, as the
// architect bot): one per branch, even when two runs race.
type Proposer interface {
	Propose(ctx context.Context, prs ops.PullRequests, p ops.Proposal) (forge.PullRequest, error)
}

// Options configures an Agent.
type Options struct {
	Project string
	// Primary is the project's primary branch; OpsPrimary the ops
	// repository's (default "main").
	Primary, OpsPrimary string
	// Forge is the project repository and Ops the ops repository, both
	// acting as the architect bot; Proposer opens sprint pull requests.
	Forge    ProjectForge
	Ops      OpsForge
	Proposer Proposer
	// Labeler, when set, labels vision issues: an identity with
	// issue-write on the project (the filer bot), since the architect
	// bot is read-only there and the forge lets no reader label. Unset:
	// the architect's own Forge tries, and a refusal leaves the comment.
	Labeler Labeler
	// Driver is the role's runtime: its tick, formula, sessions (in
	// workspaces of its sandbox) and clock, and its state dir, which
	// holds the record besides the lock and the watermark. Sessions
	// keeps each sprint's session id.
	Driver   *formulaagent.Driver
	Sessions *claude.SessionStore
	// Deciders are the humans whose decisions and answers count; Bots are
	// the factory's bot logins, which never count (nor does the
	// architect itself).
	Deciders []string
	Bots     []string
	// Filer is the filer bot's login: only its issues' decomposed-from
	// markers say that a vision has open sub-issues. Empty: no issue
	// does, and every vision is pitched as if none were filed.
	Filer string
	// MaxOpen bounds the open sprint pull requests; default
	// DefaultMaxOpen.
	MaxOpen  int
	Redactor *redact.Redactor
	Log      zerolog.Logger
}

// Agent is the architect of one project.
type Agent struct {
	o     Options
	now   func() time.Time
	store storeFile

	mu     sync.Mutex
	report []agent.Item
}

var (
	_ agent.Agent    = (*Agent)(nil)
	_ agent.Reporter = (*Agent)(nil)
)

// New returns the architect of o.Project.
func New(o Options) *Agent {
	if o.Primary == "" {
		o.Primary = "main"
	}
	if o.OpsPrimary == "" {
		o.OpsPrimary = "main"
	}
	if o.MaxOpen <= 0 {
		o.MaxOpen = DefaultMaxOpen
	}
	a := &Agent{o: o, now: o.Driver.Now, store: storeFile{path: o.Driver.StatePath("sprints.json")}}
	if rec, err := a.store.load(); err == nil {
		a.setReport(rec)
	}
	return a
}

// pass is one complete run: what it read and what it leaves.
type pass struct {
	a     *Agent
	run   *agent.Run
	rec   *record
	me    string
	who   people
	pulls []forge.PullRequest
	log   zerolog.Logger
	// timer is the earliest time a run is due for a reason of its own (a
	// failed pitch to try again), zero when none.
	timer time.Time
}

// Tick is one architect run (formulaagent.Driver.Tick): skip when
// neither the project's issues and primary branch nor the open sprint
// pull requests changed; otherwise advance every sprint pull request
// through the machine, then pitch what the budget allows.
func (a *Agent) Tick(ctx context.Context, run *agent.Run) error { return a.o.Driver.Tick(ctx, run, a) }

// Begin implements formulaagent.Role: besides the primary branch and the
// issues, the architect watches its open sprint pull requests (their
// fingerprint).
func (a *Agent) Begin(ctx context.Context, r *formulaagent.Run) (formulaagent.Body, string, error) {
	me, err := r.Identity(ctx)
	if err != nil {
		return nil, "", err
	}
	rec, err := a.store.load()
	if err != nil {
		return nil, "", err
	}
	fp, err := a.fingerprint(ctx, me)
	if err != nil {
		return nil, "", err
	}
	if r.Obs.Why == "" && fp == rec.Fingerprint {
		return nil, "", nil
	}
	why := r.Obs.Why
	if why == "" {
		why = "sprint pull requests changed"
	}
	return func(ctx context.Context, r *formulaagent.Run) (formulaagent.Outcome, error) {
		return a.body(ctx, r, rec, fp)
	}, why, nil
}

// body is a run that goes ahead, from the record rec and the fingerprint
// fp of the sprints before it.
func (a *Agent) body(ctx context.Context, r *formulaagent.Run, rec *record, fp string) (formulaagent.Outcome, error) {
	p := &pass{a: a, run: r.Run, rec: rec, me: r.Me, who: newPeople(a.o.Deciders, a.o.Bots, r.Me), log: r.Log}
	if len(a.o.Deciders) == 0 {
		p.log.Warn().Msg("no humans may decide on sprints (set maintainers in the project file or FORGE_ADMIN_USERS)")
	}
	runErr := p.all(ctx)
	if err := a.store.save(rec); err != nil {
		return formulaagent.Outcome{}, errors.Join(runErr, err)
	}
	a.setReport(rec)
	if runErr != nil {
		// No watermark: the next run looks at everything again.
		return formulaagent.Outcome{}, runErr
	}
	// A run that changed its sprints (or saw a human change them while
	// it ran) leaves no fingerprint: the next run looks again, and only
	// a run that finds everything as it left it makes the next one cheap.
	end, err := a.fingerprint(ctx, r.Me)
	if err != nil {
		return formulaagent.Outcome{}, err
	}
	rec.Fingerprint = ""
	if end == fp {
		rec.Fingerprint = fp
	}
	if err := a.store.save(rec); err != nil {
		return formulaagent.Outcome{}, err
	}
	p.due(a.now().Add(fullRunEvery))
	return formulaagent.Outcome{Timer: p.timer}, nil
}

// all advances every sprint pull request, then pitches.
func (p *pass) all(ctx context.Context) error {
	var err error
	p.pulls, err = p.a.o.Ops.ListPulls(ctx, forge.StateAll)
	if err != nil {
		return fmt.Errorf("architect: list ops pull requests: %w", err)
	}
	sprints := ourSprints(p.pulls, p.me)
	var errs []error
	for _, s := range sprints {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := p.sprint(ctx, s); err != nil {
			p.log.Warn().Int64("pr", s.Number).Str("error", p.a.o.Redactor.String(err.Error())).Msg("sprint step failed")
			errs = append(errs, err)
		}
	}
	if err := p.pitches(ctx, sprints); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// sprint advances one sprint pull request, or cleans up after a closed
// or merged one.
func (p *pass) sprint(ctx context.Context, s sprintPR) error {
	pr := p.rec.PRs[s.Number]
	if pr == nil {
		pr = &prRecord{Vision: s.Vision, Branch: s.Branch, Opened: p.a.now()}
		p.rec.PRs[s.Number] = pr
	}
	if s.State != forge.StateOpen {
		pr.Stage = StageClosed
		if s.Merged {
			pr.Stage = StageMerged
		}
		return p.cleanup(ctx, s, pr)
	}
	cs, err := p.a.o.Ops.ListComments(ctx, s.Number)
	if err != nil {
		return err
	}
	rs, err := p.a.o.Ops.ListReviews(ctx, s.Number)
	if err != nil {
		return err
	}
	v := &view{pr: s, comments: cs, reviews: rs, rec: pr, who: p.who, me: p.me}
	stage, err := p.advance(ctx, v)
	pr.Stage = stage
	if err != nil {
		return err
	}
	if stage == StageClosed {
		return p.cleanup(ctx, v.pr, pr)
	}
	return p.check(ctx, v)
}

// fingerprint sums what an unchanged run compares of the open sprint
// pull requests: number, head and body, and the ids and update times of
// their comments and reviews (a pull request's own update time has a
// resolution of a second and does not move on a review). It costs one
// request, and two per open sprint.
func (a *Agent) fingerprint(ctx context.Context, me string) (string, error) {
	open, err := a.o.Ops.ListPulls(ctx, forge.StateOpen)
	if err != nil {
		return "", fmt.Errorf("architect: list open ops pull requests: %w", err)
	}
	h := sha256.New()
	for _, s := range ourSprints(open, me) {
		fmt.Fprintf(h, "%d\x00%s\x00%s\x01", s.Number, s.HeadSHA, s.Body)
		cs, err := a.o.Ops.ListComments(ctx, s.Number)
		if err != nil {
			return "", fmt.Errorf("architect: comments of sprint #%d: %w", s.Number, err)
		}
		for _, c := range cs {
			fmt.Fprintf(h, "%d\x00%s\x00%d\x02", c.ID, c.Updated.UTC().Format(time.RFC3339Nano), len(c.Body))
		}
		rs, err := a.o.Ops.ListReviews(ctx, s.Number)
		if err != nil {
			return "", fmt.Errorf("architect: reviews of sprint #%d: %w", s.Number, err)
		}
		for _, r := range rs {
			fmt.Fprintf(h, "%d\x00%s\x00%v\x03", r.ID, r.State, r.Dismissed)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

// Report implements agent.Reporter: every open sprint pull request and
// its stage.
func (a *Agent) Report() agent.Report {
	a.mu.Lock()
	defer a.mu.Unlock()
	return agent.Report{Items: append([]agent.Item(nil), a.report...)}
}

func (a *Agent) setReport(rec *record) {
	items := reportItems(a.o.Project, rec)
	a.mu.Lock()
	a.report = items
	a.mu.Unlock()
}

// LastReport is the report of the architect of project whose state
// directory is stateDir, read from its record, for a status taken while
// no daemon runs; empty when there is none.
func LastReport(stateDir, project string) agent.Report {
	rec, err := storeFile{path: filepath.Join(stateDir, "sprints.json")}.load()
	if err != nil {
		return agent.Report{}
	}
	return agent.Report{Items: reportItems(project, rec)}
}

// reportItems are the open sprints of rec with their stages.
func reportItems(project string, rec *record) []agent.Item {
	var items []agent.Item
	for n, pr := range rec.PRs {
		if pr.Stage == StageClosed || pr.Stage == StageMerged || pr.Stage == "" {
			continue
		}
		items = append(items, agent.Item{Project: project, Role: role, Issue: pr.Vision, PR: n,
			Stage: "sprint " + string(pr.Stage), Started: pr.Opened})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].PR < items[j].PR })
	return items
}

// labeler returns the identity that labels vision issues: Options.Labeler,
// else the architect's own project client.
func (a *Agent) labeler() Labeler {
	if a.o.Labeler != nil {
		return a.o.Labeler
	}
	return a.o.Forge
}

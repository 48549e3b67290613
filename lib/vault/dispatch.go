package vault

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/text"
)

// State is where an action stands, as the dispatcher sees it.
type State string

// Action states.
const (
	StatePending State = "pending" // not (yet) allowed to run; Reason says why
	StateInvalid State = "invalid" // fails validation; never runs as it is
	StateReady   State = "ready"   // approved, not run yet
	StateRan     State = "ran"     // has a result record (started or finished)
)

// Entry is one action of the ops repository and where it stands.
type Entry struct {
	ID     string
	Tier   Tier
	State  State
	Reason string
	// Approval says how a ready action was approved; Approver is the
	// administrator who did ("" for a low-tier direct commit: no human).
	Approval string
	Approver string
	// Result is the record of an action that ran.
	Result *Result
	// PR is the open pull request of an action not merged yet.
	PR int64

	action  Action
	content []byte
}

// DispatcherOptions configures a Dispatcher.
type DispatcherOptions struct {
	// Ops is the ops checkout acting as the vault identity: results are
	// committed through it. Its data may be deleted at any time.
	Ops *ops.Repo
	// Forge is the ops repository on the forge as the vault bot: the
	// forge's record of that account's pushes is what makes a direct
	// (low-tier) action. As anyone else, no direct action runs.
	Forge provenanceForge
	// Primary is the ops repository's primary branch (default "main").
	Primary string
	// Formulas are the formulas the runner executes.
	Formulas fs.FS
	// Vault is the vault identity's git author: a direct (low-tier)
	// action's commits carry it, and Forge's pushes brought them.
	Vault Identity
	// Admins are the humans whose approval counts (checked against the
	// forge too); Bots never count.
	Admins []string
	Bots   []string
	// Runner runs approved actions (nil: the dispatcher only inspects,
	// and Cycle fails with ErrNoRunner); Secrets resolves their secrets.
	Runner  Executor
	Secrets SecretSource
	// Redactor learns every secret value before a run; logs and results
	// pass through it.
	Redactor *redact.Redactor
	// Instance names this dispatcher in claims (host and data dir).
	Instance string
	Now      func() time.Time
	Log      zerolog.Logger
}

// Dispatcher runs each approved action of the ops repository once. Its
// cycles must not overlap (the scheduler runs one at a time).
type Dispatcher struct {
	o DispatcherOptions
	// unrecorded are outcomes whose commit failed, committed again at the
	// start of the next cycle; meanwhile the claim keeps the action from
	// running again.
	unrecorded []Result
}

// NewDispatcher returns a Dispatcher.
func NewDispatcher(o DispatcherOptions) (*Dispatcher, error) {
	if o.Ops == nil || o.Forge == nil {
		return nil, ErrNoVaultIdentity
	}
	if o.Primary == "" {
		o.Primary = "main"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Redactor == nil {
		o.Redactor = redact.New()
	}
	return &Dispatcher{o: o}, nil
}

// Inspect syncs the ops checkout and returns every action with its state,
// sorted by id, changing nothing.
func (d *Dispatcher) Inspect(ctx context.Context) ([]Entry, error) {
	if _, err := d.o.Ops.Sync(ctx); err != nil {
		return nil, err
	}
	files, head, err := d.o.Ops.Local(ctx)
	if err != nil || head == "" {
		return nil, err
	}
	es, err := inspect(ctx, files, d.validator(nil), d.prover(head))
	if err != nil {
		return es, err
	}
	return d.proposed(ctx, files, es)
}

// proposed adds the actions still in open pull requests: each waits for
// an administrator.
func (d *Dispatcher) proposed(ctx context.Context, files ops.Files, es []Entry) ([]Entry, error) {
	known := map[string]bool{}
	for _, e := range es {
		known[e.ID] = true
	}
	pulls, err := d.o.Forge.ListPulls(ctx, forge.StateOpen)
	if err != nil {
		return es, err
	}
	pol, err := policyOf(files)
	if err != nil {
		return es, err
	}
	for _, pr := range pulls {
		id, ok := strings.CutPrefix(pr.Head, BranchPrefix)
		if !ok || known[id] || pr.FromFork || pr.Base != d.o.Primary || !ValidID(id) {
			continue
		}
		known[id] = true
		e := Entry{ID: id, State: StatePending, PR: pr.Number,
			Reason: fmt.Sprintf("pull request #%d awaits an administrator's approval at its head %s, and its merge", pr.Number, text.ShortSHA(pr.HeadSHA))}
		if f, err := d.o.Forge.GetFile(ctx, ActionPath(id), pr.HeadSHA); err == nil {
			e.content = f.Content
			if a, err := d.validator(pol).Parse(ActionPath(id), f.Content); err == nil {
				e.action, e.Tier = a, pol.Classify(a)
			} else {
				e.State, e.Reason = StateInvalid, fmt.Sprintf("pull request #%d: %v", pr.Number, err)
			}
		}
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].ID < es[j].ID })
	return es, nil
}

// policyOf reads the policy of files; DefaultPolicy when there is none.
func policyOf(files ops.Files) (*Policy, error) {
	data, err := files.Read(PolicyPath)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultPolicy(), nil
	}
	if err != nil {
		return nil, err
	}
	return ParsePolicy(PolicyPath, data)
}

// prover returns the provenance check at head.
func (d *Dispatcher) prover(head string) *prover {
	return &prover{f: d.o.Forge, primary: d.o.Primary, head: head, vault: d.o.Vault, admins: d.o.Admins, bots: d.o.Bots}
}

// validator is the Validator with the policy of the commit checked.
func (d *Dispatcher) validator(p *Policy) Validator {
	return Validator{Formulas: d.o.Formulas, Policy: p}
}

// inspect reads the actions of files (the ops repository at pv's head)
// and decides which are ready; v is completed with the policy of files.
func inspect(ctx context.Context, files ops.Files, v Validator, pv *prover) ([]Entry, error) {
	pol, err := policyOf(files)
	if err != nil {
		return nil, err
	}
	list, err := files.List(ActionsDir)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, tf := range list {
		id := IDOf(tf.Path)
		if id == "" {
			continue // .gitkeep, legacy result files
		}
		v.Policy = pol
		e, err := entry(ctx, files, tf.Path, id, v, pol, pv)
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// entry decides the state of one action.
func entry(ctx context.Context, files ops.Files, path, id string, v Validator, pol *Policy, pv *prover) (Entry, error) {
	e := Entry{ID: id, State: StatePending}
	data, err := files.Read(path)
	if err != nil {
		return e, err
	}
	e.content = data
	if raw, err := files.Read(ResultPath(id)); err == nil {
		r, err := ParseResult(ResultPath(id), raw)
		if err != nil {
			return e, err
		}
		e.State, e.Result = StateRan, &r
	} else if !errors.Is(err, fs.ErrNotExist) {
		return e, err
	}
	a, err := v.Parse(path, data)
	if err != nil {
		if e.State != StateRan {
			e.State, e.Reason = StateInvalid, err.Error()
		}
		return e, nil
	}
	e.action, e.Tier = a, pol.Classify(a)
	if e.State == StateRan {
		return e, nil
	}
	ap, err := pv.verify(ctx, a, e.Tier)
	if err != nil {
		e.Reason = "checking approval: " + err.Error()
		return e, nil
	}
	if ap.ok {
		e.State, e.Approval, e.Approver = StateReady, ap.how, ap.approver
	} else {
		e.Reason = ap.reason
	}
	return e, nil
}

// ErrNoRunner: a dispatcher without a runner was asked to run actions.
var ErrNoRunner = errors.New("vault dispatcher: no runner configured")

// Cycle looks at every action on the primary branch and runs each ready
// one, once. It returns the entries as they stand after the cycle.
func (d *Dispatcher) Cycle(ctx context.Context) ([]Entry, error) {
	if d.o.Runner == nil {
		return nil, ErrNoRunner
	}
	if err := d.recordLeftovers(ctx); err != nil {
		return nil, err
	}
	if _, err := d.o.Ops.Sync(ctx); err != nil {
		return nil, err
	}
	files, head, err := d.o.Ops.Local(ctx)
	if err != nil || head == "" {
		return nil, err
	}
	entries, err := inspect(ctx, files, d.validator(nil), d.prover(head))
	if err != nil {
		return entries, err
	}
	var errs []error
	for i := range entries {
		e := &entries[i]
		log := d.o.Log.With().Str("action", e.ID).Logger()
		if fr, ok := d.o.Runner.(formulaRunner); ok && e.State == StateReady && !fr.Runs(e.action.Formula) {
			e.State, e.Reason = StatePending, "approved; no runner for formula "+e.action.Formula+" here (the runner container needs a Docker engine, DOCKER_HOST)"
		}
		if df, ok := d.o.Runner.(deferrer); ok {
			switch why := df.Defer(e.action); {
			case e.State == StateRan:
				df.Forget(e.ID)
			case e.State == StateReady && why != "":
				e.State, e.Reason = StatePending, "approved; "+why
			}
		}
		if e.State != StateReady {
			if e.State != StateRan {
				log.Debug().Str("state", string(e.State)).Str("reason", e.Reason).Msg("vault action not run")
			}
			continue
		}
		if err := d.dispatch(ctx, e, head, log); err != nil {
			errs = append(errs, fmt.Errorf("vault action %s: %w", e.ID, err))
		}
	}
	entries, err = d.proposed(ctx, files, entries)
	return entries, errors.Join(append(errs, err)...)
}

// dispatch claims, runs and records one ready action.
func (d *Dispatcher) dispatch(ctx context.Context, e *Entry, head string, log zerolog.Logger) error {
	secrets, missing := d.resolve(e.action.Secrets)
	if missing != nil {
		e.State, e.Reason = StatePending, missing.Error()
		log.Warn().Err(missing).Msg("vault action waits for a secret")
		return nil
	}
	formula, err := fs.ReadFile(d.o.Formulas, e.action.Formula+".toml")
	if err != nil {
		return err
	}
	rec := Result{ID: e.ID, Status: StatusStarted, ActionSHA256: digest(e.content), OpsCommit: head,
		Approval: e.Approval, Dispatcher: d.o.Instance, Claim: nonce(), Started: d.o.Now().UTC()}
	won, err := d.claim(ctx, e, rec)
	if err != nil || !won {
		if err == nil {
			log.Info().Msg("vault action claimed by another dispatcher")
			e.State = StateRan
		}
		return err
	}
	e.State, e.Result = StateRan, &rec
	log.Info().Str("approval", e.Approval).Str("formula", e.action.Formula).Msg("vault action started")
	job := Job{Action: e.action, Content: e.content, Formula: formula, Secrets: secrets,
		Timeout: time.Duration(e.action.TimeoutMinutes) * time.Minute, OpsCommit: head,
		Tier: e.Tier, Approver: e.Approver, Approval: e.Approval}
	out, err := d.o.Runner.Run(ctx, job)
	if err != nil {
		// Nothing ran, or nothing changed outside: withdraw the claim so a
		// later cycle tries again.
		why := "the runner did not start"
		if errors.Is(err, ErrRetryLater) {
			why = "run again later"
		}
		log.Warn().Str("error", d.o.Redactor.Error(err)).Msg("vault action not done (" + why + "); it stays pending")
		e.State, e.Result, e.Reason = StateReady, nil, why+": "+d.o.Redactor.Error(err)
		return d.release(context.WithoutCancel(ctx), rec, why)
	}
	rec.ExitCode, rec.Finished, rec.Logs = out.ExitCode, d.o.Now().UTC(), tail(d.o.Redactor.String(out.Logs))
	rec.Report = tail(d.o.Redactor.String(out.Report))
	switch {
	case out.TimedOut:
		rec.Status = StatusTimeout
	case out.ExitCode == 0:
		rec.Status = StatusSucceeded
	default:
		rec.Status = StatusFailed
	}
	*e.Result = rec
	log.Info().Str("status", string(rec.Status)).Int("exit_code", rec.ExitCode).Msg("vault action finished")
	if err := d.record(context.WithoutCancel(ctx), rec); err != nil {
		d.unrecorded = append(d.unrecorded, rec)
		return fmt.Errorf("record the outcome (kept, committed next cycle): %w", err)
	}
	return nil
}

// recordLeftovers commits the outcomes a previous cycle could not.
func (d *Dispatcher) recordLeftovers(ctx context.Context) error {
	for len(d.unrecorded) > 0 {
		if err := d.record(ctx, d.unrecorded[0]); err != nil {
			return fmt.Errorf("vault action %s: record the outcome: %w", d.unrecorded[0].ID, err)
		}
		d.unrecorded = d.unrecorded[1:]
	}
	return nil
}

// resolve looks up the declared secrets and registers their values with
// the redactor.
func (d *Dispatcher) resolve(names []string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	var missing []string
	for _, n := range names {
		if d.o.Secrets == nil {
			missing = append(missing, n)
			continue
		}
		v, err := d.o.Secrets.Get(n)
		if err != nil {
			missing = append(missing, n)
			continue
		}
		d.o.Redactor.Add(v)
		out[n] = v
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %v (disinto secrets set NAME)", ErrSecretMissing, missing)
	}
	return out, nil
}

// claim commits rec as the action's result record unless one exists. The
// push decides: of two dispatchers both pushing a claim on the same head,
// the forge takes one fast-forward; the other's push is refused, its
// commit is made again on the winner's head, where the edit finds the
// record and commits nothing. The action file must still be the one
// verified, on the head the claim lands on.
func (d *Dispatcher) claim(ctx context.Context, e *Entry, rec Result) (bool, error) {
	data, err := rec.Encode()
	if err != nil {
		return false, err
	}
	mine := false
	sha, err := d.o.Ops.Commit(ctx, "vault: start "+e.ID, func(f ops.Files) ([]git.FileChange, error) {
		mine = false
		have, err := f.Read(ResultPath(e.ID))
		switch {
		case err == nil:
			// A push of ours that landed although git reported otherwise.
			mine = bytes.Contains(have, []byte(rec.Claim))
			return nil, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
		act, err := f.Read(ActionPath(e.ID))
		if err != nil || !bytes.Equal(act, e.content) {
			return nil, nil // removed or changed since verified: next cycle decides
		}
		return []git.FileChange{{Path: ResultPath(e.ID), Content: data}}, nil
	})
	if err != nil {
		return false, err
	}
	return sha != "" || mine, nil
}

// release removes a claim of ours whose run never started or changed
// nothing, saying why.
func (d *Dispatcher) release(ctx context.Context, rec Result, why string) error {
	_, err := d.o.Ops.Commit(ctx, "vault: withdraw "+rec.ID+" ("+why+")", func(f ops.Files) ([]git.FileChange, error) {
		have, err := f.Read(ResultPath(rec.ID))
		if err != nil || !bytes.Contains(have, []byte(rec.Claim)) {
			return nil, nil
		}
		return []git.FileChange{{Path: ResultPath(rec.ID), Delete: true}}, nil
	})
	return err
}

// record replaces our claim with the outcome.
func (d *Dispatcher) record(ctx context.Context, rec Result) error {
	data, err := rec.Encode()
	if err != nil {
		return err
	}
	_, err = d.o.Ops.Commit(ctx, fmt.Sprintf("vault: %s %s", rec.ID, rec.Status), func(f ops.Files) ([]git.FileChange, error) {
		have, err := f.Read(ResultPath(rec.ID))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if err == nil && !bytes.Contains(have, []byte(rec.Claim)) {
			return nil, fmt.Errorf("the result of %s is another dispatcher's", rec.ID)
		}
		return []git.FileChange{{Path: ResultPath(rec.ID), Content: data}}, nil
	})
	return err
}

// nonce returns a random claim token.
func nonce() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Content is the action file as on the primary branch.
func (e Entry) Content() []byte { return e.content }

// Action is the validated action (zero for an invalid one).
func (e Entry) Action() Action { return e.action }

// Status is where the action stands, in one word: its result's status
// once it ran, its state before.
func (e Entry) Status() string {
	if e.Result != nil {
		return string(e.Result.Status)
	}
	return string(e.State)
}

// Detail says how the action ended or where it was left, how a ready one
// was approved, or why it waits.
func (e Entry) Detail() string {
	switch {
	case e.Result != nil && e.Result.Status == StatusDropped:
		return fmt.Sprintf("%s at %s", e.Result.Approval, e.Result.Finished.Format("2006-01-02 15:04Z"))
	case e.Result != nil && e.Result.Done():
		return fmt.Sprintf("exit %d at %s; %s", e.Result.ExitCode, e.Result.Finished.Format("2006-01-02 15:04Z"), e.Result.Approval)
	case e.Result != nil:
		return fmt.Sprintf("started %s by %s; no outcome recorded", e.Result.Started.Format("2006-01-02 15:04Z"), e.Result.Dispatcher)
	case e.Approval != "":
		return e.Approval
	}
	return e.Reason
}

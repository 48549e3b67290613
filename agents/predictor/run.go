package predictor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/evidence"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/text"
)

// maxOutbox bounds the proposals file read back.
const maxOutbox = 256 << 10

// result is what one run did.
type result struct {
	Filed     []filed
	Decisions []Decision
	// Refused are proposals refused by the schema, and why.
	Refused []string
	Lines   []string
	Session claude.Result
}

func (r *result) issues() []int64 {
	out := make([]int64, 0, len(r.Filed))
	for _, f := range r.Filed {
		out = append(out, f.Issue)
	}
	return out
}

// code is the run's code: the first reason a proposal was not filed
// (vault.invalid_formula first, as it names a broken request).
func (r *result) code() ledger.Code {
	for _, f := range r.Filed {
		if f.VaultErr != nil {
			return CodeVaultRefused
		}
	}
	var first ledger.Code
	for _, d := range r.Decisions {
		if d.Code == CodeInvalidFormula {
			return d.Code
		}
		if first == "" {
			first = d.Code
		}
	}
	return first
}

// Summary is the run's summary: what was filed and why the rest was not,
// one line each.
func (r *result) Summary() []string {
	var out []string
	for _, f := range r.Filed {
		s := fmt.Sprintf("filed #%d (%s)", f.Issue, f.Kind)
		switch {
		case f.VaultPR > 0:
			s += fmt.Sprintf(", vault pull request #%d", f.VaultPR)
		case f.VaultCommit != "":
			s += ", vault action committed " + text.ShortSHA(f.VaultCommit)
		case f.VaultErr != nil:
			s += fmt.Sprintf(", %s: %s", CodeVaultRefused, f.VaultErr)
		}
		if f.Superseded > 0 {
			s += fmt.Sprintf(", supersedes #%d", f.Superseded)
		}
		out = append(out, s)
	}
	for _, d := range r.Decisions {
		if !d.Filed() {
			out = append(out, fmt.Sprintf("%s: %q: %s", d.Code, d.Proposal.Title, d.Reason))
		}
	}
	out = append(out, r.Refused...)
	return append(out, r.Lines...)
}

func (r *result) record() ledger.Record {
	detail := fmt.Sprintf("%d predictions filed", len(r.Filed))
	if s := r.Summary(); len(s) > 0 {
		detail += "; " + strings.Join(s, "; ")
	}
	return formulaagent.SessionRecord(ledger.Record{Reason: ledger.ReasonPlanned, Code: r.code(), Detail: detail}, r.Session)
}

// run is the body of a changed run: read the track record, run the
// session, decide, file.
func (a *Agent) run(ctx context.Context, me string, ops *OpsTree, log zerolog.Logger) (*result, error) {
	res := &result{}
	rec, err := a.history(ctx, me)
	if err != nil {
		return nil, err
	}
	w, err := a.o.Driver.Checkout(ctx, formulaagent.Branch(role, a.now()))
	if err != nil {
		return nil, err
	}
	defer func() { _ = w.Close() }()
	formulas := formulaNames(a.o.Formulas)
	props, err := a.session(ctx, w, rec, ops, formulas, res, log)
	if err != nil {
		return nil, err
	}
	res.Decisions = Decide(props, History{Open: rec.open, Dismissed: rec.dismissed, Me: me}, formulas)
	for _, d := range res.Decisions {
		if !d.Filed() {
			log.Info().Str("code", string(d.Code)).Str("reason", d.Reason).Msg("proposal not filed")
			continue
		}
		f, err := a.file(ctx, d, rec.shown.Marker())
		if f.Issue > 0 {
			res.Filed = append(res.Filed, f)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// What was filed stays filed; the rest of this run's
			// proposals wait for the next run.
			log.Warn().Str("error", a.o.Redactor.String(err.Error())).Msg("filing failed")
			res.Lines = append(res.Lines, "filing failed: "+a.o.Redactor.String(err.Error()))
			break
		}
		if d.Proposal.Kind == Exploit && a.o.Vault == nil {
			res.Lines = append(res.Lines, fmt.Sprintf("no vault is configured: prediction #%d has no vault request", f.Issue))
		}
		if f.VaultErr != nil {
			log.Warn().Str("error", a.o.Redactor.String(f.VaultErr.Error())).Msg("vault request refused")
		}
		log.Info().Int64("issue", f.Issue).Str("kind", string(f.Kind)).Int64("vault_pr", f.VaultPR).Msg("prediction filed")
	}
	return res, nil
}

// history reads the predictor's track record: open predictions, and the
// newest dismissed and actioned ones with the planner's last comment.
func (a *Agent) history(ctx context.Context, me string) (record, error) {
	list := func(state forge.State, l forge.LabelName) ([]forge.Issue, error) {
		is, err := a.o.Forge.ListIssues(ctx, forge.IssueQuery{State: state, Labels: []forge.LabelName{l}})
		if err != nil {
			return nil, fmt.Errorf("list %s issues: %w", l, err)
		}
		return newest(is, historyLimit), nil
	}
	var r record
	var err error
	if r.open, err = list(forge.StateOpen, forge.LabelPredictionUnreviewed); err != nil {
		return r, err
	}
	if r.dismissed, err = list(forge.StateClosed, forge.LabelPredictionDismissed); err != nil {
		return r, err
	}
	if r.actioned, err = list(forge.StateClosed, forge.LabelPredictionActioned); err != nil {
		return r, err
	}
	r.reasons = map[int64]string{}
	shown := map[int64][]forge.Comment{}
	decided := newest(append(append([]forge.Issue(nil), r.dismissed...), r.actioned...), reasonsLimit)
	for _, i := range decided {
		cs, err := a.o.Forge.ListComments(ctx, i.Number)
		if err != nil {
			return r, fmt.Errorf("comments of #%d: %w", i.Number, err)
		}
		for j := len(cs) - 1; j >= 0; j-- {
			if !strings.EqualFold(cs[j].Author, me) {
				r.reasons[i.Number] = cs[j].Body
				shown[i.Number] = cs[j : j+1]
				break
			}
		}
	}
	judge := provenance.New(provenance.Options{Forge: a.o.Forge, Now: a.now})
	if r.shown, err = judge.ShownOf(ctx, slices.Concat(r.open, r.dismissed, r.actioned), shown); err != nil {
		return r, err
	}
	return r, nil
}

// session runs the one session and reads its proposals. A failed session
// fails the run; a missing or refused outbox files nothing this run, and
// the reason is in the summary.
func (a *Agent) session(ctx context.Context, w *formulaagent.Work, rec record, ops *OpsTree,
	formulas map[string]bool, res *result, log zerolog.Logger) ([]Proposal, error) {
	blocks := []formula.Block{
		{Title: "Your tasks", Body: tasks(formulas)},
		{Title: "Your track record", Body: a.o.Redactor.String(rec.text()), Untrusted: true},
		{Title: "Evidence inventory", Body: inventory(ops), Untrusted: true},
		{Title: "Evidence (ops:" + EvidenceDir + "/)", Body: a.o.Redactor.String(evidence.Text(ops.fs())), Untrusted: true},
	}
	blocks = append(blocks, formulaagent.GraphBlock(ctx, a.o.Graph, a.o.Redactor, log)...)
	ans, err := w.Ask(ctx, formulaagent.SessionInput{Vars: map[string]string{"project": a.o.Project}, Blocks: blocks, OpsFS: ops.fs()},
		formulaagent.Outbox{File: ProposalsFile, Env: EnvProposals, Var: "proposals_file", Max: maxOutbox, What: "proposals"})
	res.Session = ans.Session
	if err == nil {
		// A session that ended in an error before it judged anything is
		// a failed session too.
		err = ans.Failed()
	}
	if err != nil {
		// Nothing was judged: the run fails (classified by the runtime)
		// and leaves no watermark, so the next run tries again.
		return nil, fmt.Errorf("predictor session: %w", err)
	}
	if ans.Missing != nil {
		res.Lines = append(res.Lines, "the session wrote no proposals")
		return nil, nil
	}
	p, refused, err := ParseProposals(ans.Data)
	if err != nil {
		res.Lines = append(res.Lines, "proposals refused: "+err.Error())
		return nil, nil
	}
	for _, e := range refused {
		log.Warn().Str("error", e.Error()).Msg("proposal refused")
		res.Refused = append(res.Refused, "refused: "+e.Error())
	}
	if len(p.Proposals) == 0 && strings.TrimSpace(p.Skipped) != "" {
		res.Lines = append(res.Lines, "skipped: "+text.Clip(oneLine(p.Skipped), 300))
	}
	return p.Proposals, nil
}

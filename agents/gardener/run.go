package gardener

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/text"
	"github.com/disinto/disinto/lib/verdict"
)

// result is what one run did.
type result struct {
	PR       int64
	Pending  int64 // an open gardener PR held this run back
	Applied  int   // manifests applied
	Manifest Manifest
	Docs     int // AGENTS.md files changed
	Lines    []string
	Session  claude.Result
	timer    time.Time
	dust     []DustEntry
	// dustKept says dust is the accumulator to keep (grooming ran).
	dustKept bool
}

func (r *result) outcome() string {
	switch {
	case r.Pending > 0:
		return fmt.Sprintf("waiting for pull request #%d", r.Pending)
	case r.PR > 0:
		return fmt.Sprintf("opened pull request #%d (%d actions, %d AGENTS.md)", r.PR, len(r.Manifest), r.Docs)
	}
	return "clean"
}

func (r *result) record() ledger.Record {
	return formulaagent.SessionRecord(ledger.Record{Reason: ledger.ReasonGroomed, PR: r.PR,
		Detail: fmt.Sprintf("%s; %d merged manifests applied", r.outcome(), r.Applied)}, r.Session)
}

// isNotFound reports a missing forge object.
func isNotFound(err error) bool { return errors.Is(err, forge.ErrNotFound) }

// run is the body of a changed run.
func (a *Agent) run(ctx context.Context, me, head string, log zerolog.Logger) (*result, error) {
	res := &result{}
	n, err := a.reconcile(ctx, me, log)
	res.Applied = n
	if err != nil {
		return nil, err
	}
	entries, err := a.dust.load()
	if err != nil {
		return nil, err
	}
	res.timer = nextExpiry(entries)
	open, err := a.o.Forge.ListPulls(ctx, forge.StateOpen)
	if err != nil {
		return nil, fmt.Errorf("list open pulls: %w", err)
	}
	if p, ok := pending(open, me); ok {
		rejected, err := a.rejected(ctx, p)
		if err != nil {
			return nil, err
		}
		if !rejected {
			res.Pending = p.Number
			log.Info().Int64("pr", p.Number).Msg("a gardener pull request is still open; grooming waits for it")
			return res, nil
		}
		if err := a.withdraw(ctx, p); err != nil {
			return nil, err
		}
		log.Info().Int64("pr", p.Number).Msg("the review asked for changes; the pull request is closed and this run decides afresh")
	}
	all, err := a.o.Forge.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll})
	if err != nil {
		return nil, fmt.Errorf("list issues: %w", err)
	}
	t := newTracker(all)
	now := a.now()
	w, err := a.o.Driver.Checkout(ctx, formulaagent.Branch(role, now))
	if err != nil {
		return nil, err
	}
	defer func() { _ = w.Close() }()
	g, err := a.groom(ctx, w, t, entries, log)
	if err != nil {
		return nil, err
	}
	res.Session, res.Lines, res.dust, res.Manifest = g.session, g.lines, g.dust, g.manifest
	res.dustKept = true
	res.timer = nextExpiry(g.dust)
	res.Docs = len(g.docChanges)
	prev, perr := w.Repo().ShowFile(ctx, w.Base, ManifestFile)
	prevEmpty := perr != nil || strings.TrimSpace(string(prev)) == "" || strings.TrimSpace(string(prev)) == "[]"
	if len(res.Manifest) == 0 && len(g.docChanges) == 0 && prevEmpty {
		log.Info().Msg("nothing to groom")
		return res, nil
	}
	changes := append(g.docChanges, git.FileChange{Path: ManifestFile, Content: res.Manifest.Encode()})
	pr, _, err := w.Publish(ctx, changes, formulaagent.PR{Title: Title,
		Message: "chore: gardener housekeeping " + now.UTC().Format("2006-01-02"),
		Body: "This pull request carries AGENTS.md updates and the pending-actions manifest `" + ManifestFile +
			"`. The actions it lists are applied to the tracker after the merge, once, by the gardener.\n\n" + g.marker(0)})
	if err != nil {
		return nil, err
	}
	res.PR = pr.Number
	summary := formulaagent.Summary("Gardener run "+now.UTC().Format(time.RFC3339), res.Manifest.Counts(), res.Lines)
	if _, err := a.o.Forge.CreateComment(ctx, pr.Number, summary); err != nil {
		log.Warn().Str("error", a.o.Redactor.String(err.Error())).Msg("run summary not posted")
	}
	log.Info().Int64("pr", pr.Number).Int("actions", len(res.Manifest)).Int("docs", res.Docs).Msg("gardener pull request opened")
	return res, nil
}

// groomed is what grooming decided.
type groomed struct {
	manifest   Manifest
	docChanges []git.FileChange
	lines      []string
	dust       []DustEntry
	session    claude.Result
	// origins are those of the issues shown to the session, taint the
	// least trusted of them: whatever the session wrote may be made from
	// any of them (origin.go).
	origins map[int64]provenance.Origin
	taint   provenance.Origin
}

// groom runs the checks, asks the session for judgement when there is
// any to give, and turns both into the manifest and the AGENTS.md
// changes.
func (a *Agent) groom(ctx context.Context, w *formulaagent.Work, t *tracker, entries []DustEntry, log zerolog.Logger) (*groomed, error) {
	g := &groomed{taint: provenance.Maintainer}
	tree, err := a.o.Forge.ListTree(ctx, w.Base)
	if err != nil {
		return nil, fmt.Errorf("list the tree at %s: %w", text.ShortSHA(w.Base), err)
	}
	ds, err := docs(ctx, w.Repo(), w.Base, tree)
	if err != nil {
		return nil, err
	}
	staged := map[int64]bool{}
	for _, e := range entries {
		staged[e.Issue] = true
	}
	judged, err := a.judged.load()
	if err != nil {
		return nil, err
	}
	asked := map[int64][]Verdict{}
	var ask []forge.Issue
	addAsk := func(i forge.Issue, kinds ...Verdict) {
		if _, ok := asked[i.Number]; ok || len(ask) >= maxCandidates || settled(judged, i) {
			return
		}
		asked[i.Number] = kinds
		ask = append(ask, i)
	}
	blockers := t.starving()
	for _, b := range blockers {
		if len(missingSections(b.Body)) > 0 {
			addAsk(b, Ore)
		}
	}
	for _, i := range t.bugCandidates() {
		addAsk(i, Bug, Feature)
	}
	for _, i := range t.techDebt() {
		if !staged[i.Number] {
			addAsk(i, Ore, Dust)
		}
	}
	var stale []docFile
	for _, d := range ds {
		ls, err := lies(ctx, w.Repo(), w.Base, tree, d, d.Content)
		if err != nil {
			return nil, err
		}
		if d.Stale || len(ls) > 0 {
			stale = append(stale, d)
		}
	}
	props := map[int64]Proposal{}
	if len(ask) > 0 || len(stale) > 0 {
		props, err = a.judge(ctx, w, ask, asked, stale, tree, g, log)
		if err != nil {
			return nil, err
		}
		if err := a.originsOf(ctx, ask, g); err != nil {
			return nil, err
		}
		for _, i := range ask {
			if p, ok := props[i.Number]; ok && (p.Kind == Feature || p.Kind == Skip) {
				judged[i.Number] = judgement{Kind: p.Kind, Basis: basis(i)}
			}
		}
		if err := a.judged.save(judged); err != nil {
			return nil, err
		}
	}
	g.manifest = a.decide(t, blockers, props, entries, g)
	if err := g.manifest.Validate(); err != nil {
		return nil, err
	}
	if err := a.refreshDocs(ctx, w, ds, tree, g); err != nil {
		return nil, err
	}
	return g, nil
}

// judge runs the session and reads its proposals. A failed session or a
// refused outbox costs the judgement of this run, not the run: the
// deterministic decisions still go out.
func (a *Agent) judge(ctx context.Context, w *formulaagent.Work, ask []forge.Issue, asked map[int64][]Verdict,
	stale []docFile, tree []string, g *groomed, log zerolog.Logger) (map[int64]Proposal, error) {
	ans, err := w.Ask(ctx, formulaagent.SessionInput{
		Vars: map[string]string{"project": a.o.Project, "primary_branch": a.o.Primary},
		Blocks: []formula.Block{
			{Title: "Your tasks", Body: tasks(ask, asked, len(stale))},
			{Title: "The issues to judge", Body: a.o.Redactor.String(issueText(ask)), Untrusted: true},
			{Title: "The AGENTS.md files to bring up to date", Body: docText(stale), Untrusted: true},
		}}, formulaagent.Outbox{File: ProposalsFile, Env: EnvProposals, Var: "proposals_file", Max: maxProposals, What: "proposals"})
	g.session = ans.Session
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		log.Warn().Str("error", a.o.Redactor.String(err.Error())).Msg("gardener session failed; only the checks decide this run")
		g.lines = append(g.lines, "the session failed: "+a.o.Redactor.String(err.Error()))
		return map[int64]Proposal{}, nil
	}
	if len(ask) == 0 {
		return map[int64]Proposal{}, nil
	}
	if ans.Missing != nil {
		g.lines = append(g.lines, "the session wrote no proposals")
		return map[int64]Proposal{}, nil
	}
	props, refused, err := parseProposals(ans.Data, asked)
	if err != nil {
		g.lines = append(g.lines, "proposals refused: "+err.Error())
		return map[int64]Proposal{}, nil
	}
	for _, e := range refused {
		log.Warn().Str("error", e.Error()).Msg("proposal refused")
		g.lines = append(g.lines, "refused: "+e.Error())
	}
	return props, nil
}

// decide builds the manifest in the processing order of spec 30 §4.1,
// one primary decision per issue.
func (a *Agent) decide(t *tracker, blockers []forge.Issue, props map[int64]Proposal, entries []DustEntry, g *groomed) Manifest {
	var m Manifest
	done := map[int64]bool{}
	// 1. Blockers starving the factory.
	for _, b := range blockers {
		p, ok := props[b.Number]
		if len(missingSections(b.Body)) > 0 && (!ok || p.Kind != Ore) {
			g.lines = append(g.lines, fmt.Sprintf("#%d starves the backlog but has no enrichment to pass the gate", b.Number))
			continue
		}
		m = append(m, promote(b, p, g.marker(b.Number))...)
		done[b.Number] = true
	}
	// 2. The quality gate.
	gate := t.gateFailures()
	for _, i := range t.open {
		miss, ok := gate[i.Number]
		if !ok || done[i.Number] {
			continue
		}
		m = append(m, Action{Action: Comment, Issue: i.Number, Body: gateComment(miss)},
			Action{Action: RemoveLabel, Issue: i.Number, Label: string(forge.LabelBacklog)})
		done[i.Number] = true
	}
	// 3. Bug reports.
	for _, i := range t.bugCandidates() {
		if p, ok := props[i.Number]; ok && p.Kind == Bug && !done[i.Number] {
			m = append(m, Action{Action: EditBody, Issue: i.Number, Body: bugBody(i.Body, p) + g.marker(i.Number) + "\n", BaseSHA256: BodyHash(i.Body)},
				Action{Action: AddLabel, Issue: i.Number, Label: string(forge.LabelBugReport)})
			done[i.Number] = true
		}
	}
	// 4. Parents whose sub-issues are all closed.
	for _, pc := range t.closable() {
		if done[pc.Parent.Number] {
			continue
		}
		m = append(m, Action{Action: Comment, Issue: pc.Parent.Number, Body: closureComment(pc)},
			Action{Action: Close, Issue: pc.Parent.Number, Reason: "all sub-issues resolved"})
		done[pc.Parent.Number] = true
	}
	// 5. Tech debt: ore is promoted, dust staged.
	var fresh []DustEntry
	for _, i := range t.techDebt() {
		p, ok := props[i.Number]
		if !ok || done[i.Number] {
			continue
		}
		switch p.Kind {
		case Ore:
			m = append(m, promote(i, p, g.marker(i.Number))...)
			done[i.Number] = true
		case Dust:
			fresh = append(fresh, DustEntry{Issue: i.Number, Group: strings.TrimSpace(p.Group), Title: i.Title, Reason: oneLine(p.Reason),
				Origin: g.origin(i.Number)})
		}
	}
	// 6. Ripe dust groups become bundles.
	kept, ripe := stage(entries, fresh, a.now())
	groups := make([]string, 0, len(ripe))
	for grp := range ripe {
		groups = append(groups, grp)
	}
	sort.Strings(groups)
	for _, grp := range groups {
		var live []DustEntry
		for _, e := range ripe[grp] {
			if t.isOpen(e.Issue) && !done[e.Issue] {
				live = append(live, e)
			}
		}
		if len(live) >= dustBundle {
			m = append(m, bundleActions(grp, live)...)
			continue
		}
		// Closed meanwhile: the group waits for more dust.
		kept = append(kept, live...)
	}
	g.dust = kept
	// Flags: judgement a human or a later run makes.
	for _, d := range t.duplicates() {
		g.lines = append(g.lines, fmt.Sprintf("possible duplicates: #%d and #%d", d[0], d[1]))
	}
	for _, n := range t.stale(a.now()) {
		g.lines = append(g.lines, fmt.Sprintf("#%d has not changed for 14 days", n))
	}
	return m
}

// refreshDocs reads back the AGENTS.md files the session wrote and
// verifies every file that is stale or changed: a file whose references
// all hold gets its watermark at the run's base; one that still lies keeps
// its watermark, and the lies are listed in the summary.
func (a *Agent) refreshDocs(ctx context.Context, w *formulaagent.Work, ds []docFile, tree []string, g *groomed) error {
	changed, err := w.Collect(ctx, func(p string) bool { return path.Base(p) == agentsFile })
	if err != nil {
		return err
	}
	edits := map[string]string{}
	for _, c := range changed {
		edits[c.Path] = string(c.Content)
	}
	known := map[string]docFile{}
	for _, d := range ds {
		known[d.Path] = d
	}
	for p := range edits {
		if _, ok := known[p]; !ok {
			dir := path.Dir(p)
			if dir == "." {
				dir = ""
			}
			known[p] = docFile{Path: p, Dir: dir, Stale: true}
		}
	}
	paths := make([]string, 0, len(known))
	for p := range known {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		d := known[p]
		content, edited := edits[p]
		if !edited {
			content = d.Content
		}
		if !d.Stale && !edited {
			continue
		}
		ls, err := lies(ctx, w.Repo(), w.Base, tree, d, content)
		if err != nil {
			return err
		}
		if gs := gaps(d, content); len(gs) > 0 && edited {
			g.lines = append(g.lines, fmt.Sprintf("%s does not mention %s", p, strings.Join(gs, ", ")))
		}
		if len(ls) == 0 {
			content = setWatermark(content, w.Base)
		} else {
			content = keepWatermark(content, d.Mark)
			for _, l := range ls {
				g.lines = append(g.lines, fmt.Sprintf("%s keeps its watermark: %s", p, l))
			}
		}
		if content != d.Content {
			g.docChanges = append(g.docChanges, git.FileChange{Path: p, Content: []byte(content)})
		}
	}
	return nil
}

// keepWatermark puts the old watermark back on line 1 (or none, when the
// file had none): a file that still lies is not marked reviewed.
func keepWatermark(content, old string) string {
	if watermark(content) != "" {
		_, content, _ = strings.Cut(content, "\n")
	}
	if old == "" {
		return content
	}
	return setWatermark(content, old)
}

// rejected reports whether the review bot asked for changes on the head
// of the open gardener pull request p: the gardener has no session to
// answer a review, so the proposal is withdrawn and decided again.
func (a *Agent) rejected(ctx context.Context, p forge.PullRequest) (bool, error) {
	if a.o.ReviewBot == "" {
		return false, nil
	}
	reviews, err := a.o.Forge.ListReviews(ctx, p.Number)
	if err != nil {
		return false, err
	}
	comments, err := a.o.Forge.ListComments(ctx, p.Number)
	if err != nil {
		return false, err
	}
	r, ok := verdict.Read(comments, reviews, p.HeadSHA, a.o.ReviewBot)
	return ok && r.Verdict == verdict.RequestChanges, nil
}

// withdraw closes a gardener pull request the review rejected, saying
// why; its manifest is never applied.
func (a *Agent) withdraw(ctx context.Context, p forge.PullRequest) error {
	if _, err := a.o.Forge.CreateComment(ctx, p.Number, "The review asked for changes, and the gardener does not edit a "+
		"proposal: this pull request is closed unapplied, and this run decides again from the tracker as it is now."); err != nil {
		return err
	}
	if err := a.o.Forge.ClosePull(ctx, p.Number); err != nil {
		return err
	}
	return a.o.Forge.DeleteBranch(ctx, p.Head)
}

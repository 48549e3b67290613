package architect

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/sprint"
	"github.com/disinto/disinto/lib/text"
)

// pitchRetry is how long a vision whose pitch failed waits before it is
// tried again with the same body.
const pitchRetry = 24 * time.Hour

// maxTreePaths bounds the project file list shown to a pitch.
const maxTreePaths = 400

// pitches pitches the unpitched vision issues, oldest first, while the
// budget of open sprint pull requests allows; a vision with an empty body
// is labelled underspecified instead.
func (p *pass) pitches(ctx context.Context, sprints []sprintPR) error {
	visions, err := p.a.o.Forge.ListIssues(ctx, forge.IssueQuery{Labels: []forge.LabelName{forge.LabelVision}})
	if err != nil {
		return fmt.Errorf("architect: list vision issues: %w", err)
	}
	if len(visions) == 0 {
		return nil
	}
	sort.Slice(visions, func(i, j int) bool { return visions[i].Number < visions[j].Number })
	open, taken := 0, map[int64]bool{}
	for _, s := range sprints {
		if s.State == forge.StateOpen {
			open++
			taken[s.Vision] = true
		}
		if s.Merged {
			taken[s.Vision] = true
		}
	}
	// A sprint branch of the ops repository itself (a legacy or hand-made
	// sprint without the marker) also keeps its vision from a second
	// pitch: only writers of the ops repository make such branches, and
	// nothing is acted on because of it.
	for _, pr := range p.pulls {
		if m := branchRe.FindStringSubmatch(pr.Head); m != nil && !pr.FromFork && (pr.State == forge.StateOpen || pr.Merged) {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			taken[n] = true
		}
	}
	decomposed, err := p.decomposed(ctx)
	if err != nil {
		return err
	}
	budget := p.a.o.MaxOpen - open
	for _, v := range visions {
		if taken[v.Number] || decomposed[v.Number] || v.HasLabel(forge.LabelInProgress) {
			continue
		}
		if strings.TrimSpace(v.Body) == "" {
			if err := p.underspecified(ctx, v); err != nil {
				return err
			}
			continue
		}
		if budget <= 0 {
			continue
		}
		hash := bodyHash(v.Body)
		if f, ok := p.rec.Failed[v.Number]; ok && f.Hash == hash {
			if due := f.At.Add(pitchRetry); p.a.now().Before(due) {
				p.due(due)
				continue
			}
		}
		comments, err := p.a.o.Forge.ListComments(ctx, v.Number)
		if err != nil {
			return fmt.Errorf("vision #%d: %w", v.Number, err)
		}
		if p.rejected(comments, hash) {
			continue
		}
		if err := p.pitch(ctx, v, comments); err != nil {
			return err
		}
		budget--
	}
	return nil
}

// due notes a time a run is due.
func (p *pass) due(t time.Time) {
	if p.timer.IsZero() || t.Before(p.timer) {
		p.timer = t
	}
}

// decomposed returns the visions with open sub-issues filed by the
// filer, read from its marker with the exact vision number (W-AR-8). The
// marker counts only in the filer bot's issues: anyone could paste it
// into an issue of their own to keep a vision from being pitched.
func (p *pass) decomposed(ctx context.Context) (map[int64]bool, error) {
	is, err := p.a.o.Forge.ListIssues(ctx, forge.IssueQuery{State: forge.StateOpen})
	if err != nil {
		return nil, fmt.Errorf("architect: list open issues: %w", err)
	}
	out := map[int64]bool{}
	for _, i := range is {
		for _, d := range i.DecomposedFromBy(p.a.o.Filer) {
			if d.Vision != i.Number {
				out[d.Vision] = true
			}
		}
	}
	return out, nil
}

// rejected reports whether a sprint of the vision was rejected while its
// body hashed to hash: the architect's own note says so.
func (p *pass) rejected(comments []forge.Comment, hash string) bool {
	for _, c := range comments {
		if m, ok := c.MarkerBy(forge.MarkerSprintRejected, p.me); ok && m.Fields["hash"] == hash {
			return true
		}
	}
	return false
}

// underspecified labels a vision issue with an empty body and says why,
// once (W-AR-13).
func (p *pass) underspecified(ctx context.Context, v forge.Issue) error {
	comments, err := p.a.o.Forge.ListComments(ctx, v.Number)
	if err != nil {
		return fmt.Errorf("vision #%d: %w", v.Number, err)
	}
	for _, c := range comments {
		if _, ok := c.MarkerBy(forge.MarkerVisionUnderspecified, p.me); ok {
			return nil
		}
	}
	body := "This vision issue has no body, so there is nothing to pitch a sprint from. Describe the goal, " +
		"who it is for and what done looks like; the architect pitches it on its next run.\n\n" +
		marker(forge.MarkerVisionUnderspecified, map[string]string{"issue": strconv.FormatInt(v.Number, 10)})
	if _, err := p.a.o.Forge.CreateComment(ctx, v.Number, body); err != nil {
		return fmt.Errorf("vision #%d: %w", v.Number, err)
	}
	if !v.HasLabel(forge.LabelUnderspecified) {
		if err := p.a.labeler().AddLabels(ctx, v.Number, forge.LabelUnderspecified); err != nil {
			// The comment says it; a bot without issue-write on the
			// project cannot label.
			p.log.Warn().Int64("issue", v.Number).Str("error", p.a.o.Redactor.String(err.Error())).Msg("could not label the vision issue underspecified")
		}
	}
	p.log.Info().Int64("issue", v.Number).Msg("vision issue has an empty body")
	return p.record(ledger.Record{Reason: ledger.ReasonRefused, Code: CodeUnderspecified, Issue: v.Number,
		Detail: "the vision issue has an empty body"})
}

// pitch asks a session for the sprint of vision v and, when its document
// passes validation, opens the sprint pull request with the file and the
// footer.
func (p *pass) pitch(ctx context.Context, v forge.Issue, comments []forge.Comment) error {
	o := p.a.o
	branch := freeBranch(v.Number, p.pulls, p.me)
	red := o.Redactor
	blocks := []formula.Block{
		{Title: fmt.Sprintf("Vision issue #%d: %s", v.Number, v.Title), Body: red.String(v.Body), Untrusted: true},
	}
	if tree, err := o.Forge.ListTree(ctx, o.Primary); err == nil {
		blocks = append(blocks, formula.Block{Title: "The project's files (primary branch)", Body: red.String(treeText(tree)), Untrusted: true})
	}
	out, err := p.session(ctx, sessionIn{branch: branch, mode: ModePitch, vision: v, blocks: blocks})
	if err != nil {
		return err
	}
	fail := func(why string) error {
		p.rec.Failed[v.Number] = pitchFailure{Hash: bodyHash(v.Body), At: p.a.now(), Why: why}
		p.due(p.a.now().Add(pitchRetry))
		p.log.Warn().Int64("issue", v.Number).Str("why", why).Msg("pitch refused")
		return p.record(ledger.Record{Reason: ledger.ReasonRefused, Code: CodeInvalid, Issue: v.Number, Detail: why,
			SessionID: out.res.SessionID, CostUSD: out.res.CostUSD, Turns: out.res.NumTurns,
			InputTokens: out.res.Usage.InputTokens, OutputTokens: out.res.Usage.OutputTokens})
	}
	if out.sprint == nil {
		return fail("the pitch session wrote no sprint document")
	}
	slug, err := p.slug(ctx, v.Title)
	if err != nil {
		return err
	}
	path := sprint.Path(slug)
	spec, err := sprint.Parse(path, out.sprint)
	if err != nil {
		return fail(text.Clip(err.Error(), 500))
	}
	if int64(spec.Vision) != v.Number {
		return fail(fmt.Sprintf("%s names vision #%d, not #%d", path, spec.Vision, v.Number))
	}
	pr, err := o.Proposer.Propose(ctx, o.Ops, ops.Proposal{Branch: branch, Title: titlePrefix + oneLine(v.Title),
		Body: mirror(out.sprint, sprintID{Vision: v.Number, Slug: slug, Branch: branch}), Message: "sprint: add " + slug + ".md",
		Changes: []git.FileChange{{Path: path, Content: out.sprint}}})
	if err != nil {
		return fmt.Errorf("vision #%d: open the sprint pull request: %w", v.Number, err)
	}
	p.pulls = append(p.pulls, pr)
	if _, err := o.Ops.CreateComment(ctx, pr.Number, Footer); err != nil {
		// The next run finds the pull request without its footer
		// (stage pitched) and posts it.
		return fmt.Errorf("sprint #%d: footer: %w", pr.Number, err)
	}
	p.rec.PRs[pr.Number] = &prRecord{Vision: v.Number, Branch: branch, Stage: StageAwaitingDecision, Opened: p.a.now()}
	delete(p.rec.Failed, v.Number)
	if v.HasLabel(forge.LabelUnderspecified) && p.markedUnderspecified(comments) {
		if err := p.a.labeler().RemoveLabels(ctx, v.Number, forge.LabelUnderspecified); err != nil {
			p.log.Warn().Int64("issue", v.Number).Str("error", red.String(err.Error())).Msg("could not remove the underspecified label")
		}
	}
	p.log.Info().Int64("issue", v.Number).Int64("pr", pr.Number).Str("slug", slug).Msg("sprint pitched")
	return p.record(ledger.Record{Reason: ledger.ReasonPlanned, Code: CodePitched, Issue: v.Number, PR: pr.Number,
		Detail:    fmt.Sprintf("pitched vision #%d as ops pull request #%d (%s)", v.Number, pr.Number, path),
		SessionID: out.res.SessionID, CostUSD: out.res.CostUSD, Turns: out.res.NumTurns,
		InputTokens: out.res.Usage.InputTokens, OutputTokens: out.res.Usage.OutputTokens})
}

// markedUnderspecified reports whether the architect labelled the
// vision underspecified (its comment says so).
func (p *pass) markedUnderspecified(comments []forge.Comment) bool {
	for _, c := range comments {
		if _, ok := c.MarkerBy(forge.MarkerVisionUnderspecified, p.me); ok {
			return true
		}
	}
	return false
}

// slug is a unique slug for a sprint titled title: not a file of the ops
// repository's primary branch, nor the slug of an open sprint.
func (p *pass) slug(ctx context.Context, title string) (string, error) {
	files, err := p.a.o.Ops.ListTree(ctx, p.a.o.OpsPrimary)
	if err != nil {
		return "", fmt.Errorf("architect: list the ops repository: %w", err)
	}
	used := map[string]bool{}
	dir := path.Dir(sprint.Path("x")) + "/"
	for _, f := range files {
		if s, ok := strings.CutPrefix(f, dir); ok && strings.HasSuffix(s, ".md") {
			used[strings.TrimSuffix(s, ".md")] = true
		}
	}
	for _, s := range ourSprints(p.pulls, p.me) {
		if s.State == forge.StateOpen || s.Merged {
			used[s.Slug] = true
		}
	}
	return sprint.UniqueSlug(sprint.Slug(title), func(s string) bool { return used[s] }), nil
}

// treeText lists paths, bounded.
func treeText(paths []string) string {
	if len(paths) > maxTreePaths {
		return strings.Join(paths[:maxTreePaths], "\n") + fmt.Sprintf("\n… and %d more", len(paths)-maxTreePaths)
	}
	return strings.Join(paths, "\n")
}

// oneLine folds a title onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

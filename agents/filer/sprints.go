package filer

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/sprint"
)

// Outcome codes of the filer's ledger records.
const (
	CodeFiled      ledger.Code = "sprint.filed"
	CodeRefused    ledger.Code = "sprint.invalid"
	CodeVisionDone ledger.Code = "vision.completed"
)

// refusal is a sprint pull request the filer will not file: a problem of
// the merged files, not of the forge. It is said once, on the pull
// request.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// refuse makes a refusal.
func refuse(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

// fileSprints files every merged sprint pull request of the ops
// repository that has no outcome comment of the filer yet, oldest first.
func (a *Agent) fileSprints(ctx context.Context, run *agent.Run, issues *lazyIndex, log zerolog.Logger) error {
	repo, err := a.o.Ops.Get(ctx)
	if errors.Is(err, forge.ErrNotFound) {
		// The ops repository is private: a filer-bot provisioned before
		// it was made a reader sees none.
		return fmt.Errorf("ops repository: %w (is %s a reader of it? disinto init grants that)", err, a.o.Bot)
	}
	if err != nil {
		return fmt.Errorf("ops repository: %w", err)
	}
	pulls, err := a.o.Ops.ListPulls(ctx, forge.StateClosed)
	if err != nil {
		return fmt.Errorf("list ops pull requests: %w", err)
	}
	slices.SortFunc(pulls, func(x, y forge.PullRequest) int { return int(x.Number - y.Number) })
	for _, pr := range pulls {
		if !isSprintPull(pr, repo.DefaultBranch) {
			continue
		}
		done, err := a.outcomeSaid(ctx, pr.Number)
		if err != nil {
			return err
		}
		if done {
			continue
		}
		idx, err := issues.get(ctx)
		if err != nil {
			return err
		}
		if err := a.filePull(ctx, run, idx, pr, log.With().Int64("pr", pr.Number).Logger()); err != nil {
			return err
		}
	}
	return nil
}

// isSprintPull reports whether pr is a merged sprint pull request into
// the ops repository's primary branch. Who merged it is the forge's
// business: the ops primary branch is protected and merges are the
// humans' decision (spec 50 §2.2 P4).
func isSprintPull(pr forge.PullRequest, primary string) bool {
	return pr.Merged && pr.MergedSHA != "" && pr.Base == primary && !pr.FromFork &&
		strings.HasPrefix(pr.Title, forge.SprintTitlePrefix)
}

// outcomeSaid reports whether the filer has already commented its outcome
// (filed or refused) on pull request n.
func (a *Agent) outcomeSaid(ctx context.Context, n int64) (bool, error) {
	cs, err := a.o.Ops.ListComments(ctx, n)
	if err != nil {
		return false, fmt.Errorf("comments of ops pull request #%d: %w", n, err)
	}
	for _, c := range cs {
		if !a.mine(c.Author) {
			continue
		}
		for _, k := range []string{forge.MarkerSprintFiled, forge.MarkerSprintRefused} {
			if _, ok := c.MarkerBy(k, a.o.Bot); ok {
				return true, nil
			}
		}
	}
	return false, nil
}

// filedSprint is one sprint of a pull request, validated, with its vision
// issue.
type filedSprint struct {
	spec   sprint.Spec
	vision forge.Issue
	// issues are the numbers of its sub-issues, in file order, once filed.
	issues []int64
}

// filePull reads, validates and files every sprint file pull request pr
// touched. Nothing is filed unless all of them are valid.
func (a *Agent) filePull(ctx context.Context, run *agent.Run, idx *index, pr forge.PullRequest, log zerolog.Logger) error {
	sprints, err := a.readPull(ctx, idx, pr)
	var r *refusal
	switch {
	case errors.As(err, &r):
		return a.refusePull(ctx, run, pr, r, log)
	case err != nil:
		return err
	case len(sprints) == 0:
		return nil // an architect: pull request without a sprint file
	}
	for i := range sprints {
		if err := a.fileSprint(ctx, idx, &sprints[i], log); err != nil {
			return err
		}
	}
	body, err := filedComment(a.o.Repo, pr.Number, sprints)
	if err != nil {
		return err
	}
	if _, err := a.o.Ops.CreateComment(ctx, pr.Number, body); err != nil {
		return fmt.Errorf("comment on ops pull request #%d: %w", pr.Number, err)
	}
	for _, s := range sprints {
		log.Info().Str("sprint", s.spec.Slug).Int64("vision", s.vision.Number).Ints64("issues", s.issues).Msg("sprint filed")
		if err := run.Record(ledger.Record{Reason: ledger.ReasonDone, Code: CodeFiled, PR: pr.Number, Issue: s.vision.Number,
			Detail: fmt.Sprintf("sprint %s of vision #%d: %s", s.spec.Slug, s.vision.Number, numbers(s.issues))}); err != nil {
			return err
		}
	}
	return nil
}

// readPull reads the sprint files pr touched at its merge commit and
// validates them, with their vision issues. A problem of the files is a
// *refusal.
func (a *Agent) readPull(ctx context.Context, idx *index, pr forge.PullRequest) ([]filedSprint, error) {
	diff, err := a.o.Ops.PullDiff(ctx, pr.Number)
	if err != nil {
		return nil, fmt.Errorf("diff of ops pull request #%d: %w", pr.Number, err)
	}
	var out []filedSprint
	for _, p := range sprintPaths(diff) {
		f, err := a.o.Ops.GetFile(ctx, p, pr.MergedSHA)
		switch {
		case errors.Is(err, forge.ErrNotFound):
			return nil, refuse("%s is not in the merge commit %s", p, pr.MergedSHA)
		case err != nil:
			return nil, fmt.Errorf("read %s at %s: %w", p, pr.MergedSHA, err)
		}
		spec, err := sprint.Parse(p, f.Content)
		if err != nil {
			return nil, refuse("%v", err)
		}
		if spec.Slug == "" {
			return nil, refuse("%s: the file name is not a sprint slug ([a-z0-9-], at most %d characters)", p, sprint.MaxSlug)
		}
		vision, ok := idx.issues[int64(spec.Vision)]
		switch {
		case !ok:
			return nil, refuse("%s: vision #%d is no issue of the project", p, spec.Vision)
		case !vision.HasLabel(forge.LabelVision):
			return nil, refuse("%s: #%d is not labelled %s", p, spec.Vision, forge.LabelVision)
		}
		if err := checkBodies(spec); err != nil {
			return nil, err
		}
		out = append(out, filedSprint{spec: spec, vision: vision})
	}
	return out, nil
}

// sprintPaths returns the sprint files (sprints/*.md) a unified diff adds
// or changes, in order; deleted files are not among them.
func sprintPaths(diff string) []string {
	var out []string
	prev := ""
	for line := range strings.SplitSeq(diff, "\n") {
		line = strings.TrimRight(line, "\r")
		// A file header is "--- a/…" then "+++ b/…"; an added line that
		// reads "++ b/…" is content.
		header := strings.HasPrefix(prev, "--- ")
		prev = line
		p, ok := strings.CutPrefix(line, "+++ ")
		if !ok || !header {
			continue
		}
		if uq, err := strconv.Unquote(p); err == nil {
			p = uq
		}
		p, ok = strings.CutPrefix(p, "b/")
		if !ok || path.Dir(p) != sprint.Dir || path.Ext(p) != ".md" || slices.Contains(out, p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// fileSprint files the sub-issues of s that are not filed yet, each after
// those it depends on, then labels the vision in-progress.
func (a *Agent) fileSprint(ctx context.Context, idx *index, s *filedSprint, log zerolog.Logger) error {
	spec := s.spec
	numberOf := map[string]int64{}
	for _, sub := range spec.Order() {
		k := subKey{spec.Slug, sub.ID}
		if is, ok := idx.filed[k]; ok {
			numberOf[sub.ID] = is.Number
			continue
		}
		var prereq []int64
		for _, d := range sub.DependsOn {
			prereq = append(prereq, numberOf[d])
		}
		in := forge.NewIssue{Title: sub.Title, Body: issueBody(spec, sub, prereq), Labels: labels(sub.Labels)}
		is, err := a.o.Forge.CreateIssue(ctx, in)
		if is.Number > 0 {
			// Created, even if its labels failed: it is filed.
			if is.Author == "" {
				is.Author = a.o.Bot
			}
			if is.Body == "" {
				is.Body = in.Body
			}
			idx.add(is)
			numberOf[sub.ID] = is.Number
			log.Info().Str("sprint", spec.Slug).Str("id", sub.ID).Int64("issue", is.Number).Msg("sub-issue filed")
		}
		if err != nil {
			return fmt.Errorf("file %s of sprint %s: %w", sub.ID, spec.Slug, err)
		}
	}
	for _, sub := range spec.SubIssues {
		s.issues = append(s.issues, numberOf[sub.ID])
	}
	if !s.vision.HasLabel(forge.LabelInProgress) {
		if err := a.o.Forge.AddLabels(ctx, s.vision.Number, forge.LabelInProgress); err != nil {
			return fmt.Errorf("label vision #%d %s: %w", s.vision.Number, forge.LabelInProgress, err)
		}
		s.vision.Labels = append(s.vision.Labels, forge.LabelInProgress)
		idx.issues[s.vision.Number] = s.vision
	}
	return nil
}

// labels converts validated label names.
func labels(names []string) []forge.LabelName {
	out := make([]forge.LabelName, len(names))
	for i, n := range names {
		out[i] = forge.LabelName(n)
	}
	return out
}

// refusePull says once, on pull request pr, why its sprints are not filed.
func (a *Agent) refusePull(ctx context.Context, run *agent.Run, pr forge.PullRequest, r *refusal, log zerolog.Logger) error {
	body, err := refusedComment(pr.Number, r.msg)
	if err != nil {
		return err
	}
	if _, err := a.o.Ops.CreateComment(ctx, pr.Number, body); err != nil {
		return fmt.Errorf("comment on ops pull request #%d: %w", pr.Number, err)
	}
	log.Warn().Str("reason", r.msg).Msg("sprint not filed")
	return run.Record(ledger.Record{Reason: ledger.ReasonRefused, Code: CodeRefused, PR: pr.Number, Detail: r.msg})
}

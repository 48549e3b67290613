package dev

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
)

// Every prompt a session gets is built here: the first one from the dev
// formula, and the follow-ups a session is resumed with.

const nudgeText = "You ended your turn without committing anything new on the branch. If you made changes, commit " +
	"them on the branch with the requested message and write PHASE:awaiting_ci to the phase file. " +
	"If the task should not be done, write the refusal JSON to the result file instead."

const restartText = "The orchestrator restarted while you were working. Check the worktree (git status, git log), " +
	"finish the task, commit on the branch and write the phase file as instructed before."

// sessionPrompt returns the prompt of st's session stage and the session
// it resumes ("" for a new one). Without a session to resume, every stage
// starts from the full prompt.
func (a *Agent) sessionPrompt(ctx context.Context, st *State) (prompt, resume string, err error) {
	resume = st.SessionID
	switch {
	case resume == "":
		p, err := a.prompt(ctx, st)
		return p, "", err
	case st.Stage == StageFixing && st.News != "":
		return st.News, resume, nil
	case st.Stage == StageResuming:
		p, err := a.resumePrompt(ctx, st)
		return p, resume, err
	case st.Stage == StageNudging:
		return nudgeText, resume, nil
	}
	return restartText, resume, nil
}

// promptTitle is an issue title made safe for the formula's instructions,
// which quote it and use it in a suggested commit command: quotes,
// backticks, dollar signs, backslashes and control characters, which could
// end the quoting or run commands in the model's shell, are dropped.
func promptTitle(title string) string {
	clean := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || strings.ContainsRune("\"'`$\\", r) {
			return -1
		}
		return r
	}, title)
	return strings.Join(strings.Fields(clean), " ")
}

// prompt renders the first prompt of an issue from the dev formula.
func (a *Agent) prompt(ctx context.Context, st *State) (string, error) {
	issue, err := a.o.Forge.GetIssue(ctx, st.Issue)
	if err != nil {
		return "", err
	}
	comments, err := a.o.Forge.ListComments(ctx, st.Issue)
	if err != nil {
		return "", err
	}
	me, _ := a.identity(ctx)
	bots := map[string]bool{me: true}
	for _, b := range a.o.BotUsernames {
		bots[b] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Issue #%d: %s\n\n%s\n", issue.Number, issue.Title, strings.TrimSpace(issue.Body))
	var human []string
	for _, c := range comments {
		if bots[c.Author] {
			continue
		}
		human = append(human, fmt.Sprintf("### @%s (%s):\n\n%s", c.Author, c.Created.UTC().Format("2006-01-02"), strings.TrimSpace(c.Body)))
	}
	if len(human) > 0 {
		fmt.Fprintf(&b, "\n## Issue comments\n\n%s\n", strings.Join(human, "\n\n"))
	}
	blocks := []formula.Block{{Title: "Issue", Body: a.red.String(b.String()), Untrusted: true}}
	if st.PR > 0 {
		blocks = append(blocks, formula.Block{Title: "Existing work", Body: fmt.Sprintf(
			"Pull request #%d already exists for branch %s; keep working on that branch and never open another pull request.", st.PR, st.Branch)})
	}
	// Project conventions come from the primary branch as the forge has
	// it, and are data: whoever merged them is not the factory.
	repoFS, err := a.o.Git.PrimaryFS(ctx)
	if err != nil {
		return "", err
	}
	if data, err := fs.ReadFile(repoFS, "CLAUDE.md"); err == nil {
		blocks = append(blocks, formula.Block{Title: "CLAUDE.md", Body: a.red.String(string(data)), Untrusted: true})
	}
	ws, err := a.workspace(st.Issue)
	if err != nil {
		return "", err
	}
	return formula.Render(a.o.Formula, formula.RenderInput{
		Role: "dev", Project: a.o.Project, Repo: a.o.Repo,
		Vars:   map[string]string{"issue": fmt.Sprint(st.Issue), "issue_title": promptTitle(issue.Title)},
		RepoFS: repoFS, Blocks: blocks,
		Protocols: []formula.Protocol{formula.ProtocolPhase, formula.ProtocolResult},
		PhaseFile: a.phaseFile(ws), ResultFile: a.resultFile(ws),
		Branch: st.Branch, PrimaryBranch: a.o.PrimaryBranch,
		Env:    []formula.EnvVar{{Name: "DISINTO_ISSUE", Value: fmt.Sprint(st.Issue)}},
		Logger: *a.issueLog(*st),
	})
}

// resumePrompt resumes a run a maintainer sent back: it carries what
// others wrote on the issue since the bot's last outcome comment (the
// blocked or escalated one), so an answer reaches the session.
func (a *Agent) resumePrompt(ctx context.Context, st *State) (string, error) {
	comments, err := a.o.Forge.ListComments(ctx, st.Issue)
	if err != nil {
		return "", err
	}
	me, err := a.identity(ctx)
	if err != nil {
		return "", err
	}
	bots := map[string]bool{me: true}
	for _, b := range a.o.BotUsernames {
		bots[b] = true
	}
	var since []string
	for _, c := range comments {
		if c.Author == me {
			if _, ok := forge.FindMarker(c.Body, "dev-outcome"); ok {
				since = since[:0]
			}
			continue
		}
		if bots[c.Author] {
			continue
		}
		since = append(since, fmt.Sprintf("### @%s (%s):\n\n%s", c.Author, c.Created.UTC().Format("2006-01-02"), strings.TrimSpace(c.Body)))
	}
	answer := "(no new comments)"
	if len(since) > 0 {
		answer = formula.Untrusted(a.red.String(strings.Join(since, "\n\n")))
	}
	return fmt.Sprintf("Work on issue #%d was stopped (blocked or escalated) and a maintainer has sent it back to you. "+
		"Comments on the issue since then:\n\n%s\n\nTake them into account and continue from the existing branch %s "+
		"(and pull request, if there is one; never open another): check the worktree (git status, git log), finish the "+
		"task, commit on the branch and write the phase file as instructed before.", st.Issue, answer, st.Branch), nil
}

// ciNews is the prompt of a session resumed with a CI failure.
func ciNews(st *State, limit int, report string) string {
	return fmt.Sprintf("CI failed on pull request #%d at %s (attempt %d/%d).\n\nWhat CI reported:\n%s\n\n"+
		"Find the cause, fix it without weakening any test, run the checks, commit, and rebase onto the primary "+
		"branch if it moved. Then write PHASE:awaiting_ci to the phase file.",
		st.PR, shortSHA(st.HeadSHA), st.CIFixes, limit, formula.Untrusted(report))
}

// reviewNews is the prompt of a session resumed with a change request;
// feedback is the review's text, secrets already masked.
func reviewNews(st *State, limit int, feedback string) string {
	return fmt.Sprintf("The review of pull request #%d at %s asks for changes (round %d/%d):\n\n%s\n\n"+
		"Address every point (or explain in the commit message why a point should not be followed), run the "+
		"checks, commit, and rebase onto the primary branch if it moved. "+
		"Then write PHASE:awaiting_ci to the phase file.",
		st.PR, shortSHA(st.HeadSHA), st.ReviewRounds, limit, formula.Untrusted(feedback))
}

// rebaseNews is the prompt of a session resumed to rebase an approved
// pull request; detail is what the forge said, if anything.
func rebaseNews(st *State, limit int, why, detail, primary string) string {
	if detail != "" {
		detail = "\n\nThe forge said:\n\n" + formula.Untrusted(detail)
	}
	return fmt.Sprintf("Pull request #%d is approved but cannot be merged: %s (rebase %d/%d).%s\n\n"+
		"Rebase the branch onto origin/%s (already fetched), resolve any conflicts keeping the intent of both sides "+
		"and run the checks. Then write PHASE:awaiting_ci to the phase file.",
		st.PR, why, st.Rebases, limit, detail, primary)
}

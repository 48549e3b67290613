package dev

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/text"
)

// Every prompt a session gets is built here: the first one from the dev
// formula, and the follow-ups a session is resumed with.

// The follow-ups of the dev formula the agent resumes sessions with.
const (
	followNudge      = "nudge"
	followRestart    = "restart"
	followResume     = "resume"
	followCIFailed   = "ci_failed"
	followChanges    = "changes_requested"
	followRebase     = "rebase"
	followNoProgress = "no_progress"
)

// followupVars lists every follow-up the agent renders with the names of
// the values it gives; the dev formula must declare exactly these.
func followupVars() map[string][]string {
	return map[string][]string{
		followNudge:      nil,
		followRestart:    nil,
		followResume:     {"issue", "comments", "branch"},
		followCIFailed:   {"pr", "head", "attempt", "limit", "report"},
		followChanges:    {"pr", "head", "round", "limit", "feedback"},
		followRebase:     {"pr", "why", "attempt", "limit", "forge_said", "primary_branch"},
		followNoProgress: {"pr", "head"},
	}
}

// checkFollowups reports a dev formula (an override, say) that lacks a
// follow-up the agent renders or declares other values than it gives.
func checkFollowups(f *formula.Formula) error {
	for name, want := range followupVars() {
		fu, ok := f.Followup(name)
		if !ok {
			return fmt.Errorf("formula %s (%s) lacks [followups.%s]", f.Name, f.File, name)
		}
		got := slices.Sorted(slices.Values(fu.Vars))
		if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			return fmt.Errorf("formula %s (%s): [followups.%s] declares vars %v; the dev agent gives %v", f.Name, f.File, name, fu.Vars, want)
		}
	}
	return nil
}

// CheckFormula reports a dev formula the agent cannot run: one lacking a
// follow-up it renders. An override it refuses is never put in force.
func CheckFormula(f *formula.Formula) error { return checkFollowups(f) }

// formula returns the dev formula in force.
func (a *Agent) formula() *formula.Formula { return formula.InForce(a.o.LiveFormula, a.o.Formula) }

// lessons returns the bot's lessons, "" without any.
func (a *Agent) lessons(ctx context.Context) string {
	if a.o.Lessons == nil {
		return ""
	}
	return a.o.Lessons(ctx)
}

// followup renders the formula's follow-up name with vals.
func (a *Agent) followup(name string, vals map[string]string) (string, error) {
	return a.formula().RenderFollowup(name, vals)
}

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
		p, err := a.followup(followNudge, nil)
		return p, resume, err
	}
	p, err := a.followup(followRestart, nil)
	return p, resume, err
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
	} else if art, ok, err := a.priorArt(ctx, st); err != nil {
		return "", err
	} else if ok {
		blocks = append(blocks, art)
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
	return formula.Render(a.formula(), formula.RenderInput{
		Role: "dev", Project: a.o.Project, Repo: a.o.Repo,
		Vars:   map[string]string{"issue": fmt.Sprint(st.Issue), "issue_title": promptTitle(issue.Title)},
		RepoFS: repoFS, Blocks: blocks, Lessons: a.lessons(ctx),
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
			if _, ok := c.MarkerBy("dev-outcome", me); ok {
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
	return a.followup(followResume, map[string]string{"issue": fmt.Sprint(st.Issue), "comments": answer, "branch": st.Branch})
}

// ciNews is the prompt of a session resumed with a CI failure.
func (a *Agent) ciNews(st *State, report string) (string, error) {
	return a.followup(followCIFailed, map[string]string{"pr": fmt.Sprint(st.PR), "head": text.ShortSHA(st.HeadSHA),
		"attempt": fmt.Sprint(st.CIFixes), "limit": fmt.Sprint(a.lim.CIFixes), "report": formula.Untrusted(report)})
}

// reviewNews is the prompt of a session resumed with a change request;
// feedback is the review's text, secrets already masked.
func (a *Agent) reviewNews(st *State, feedback string) (string, error) {
	return a.followup(followChanges, map[string]string{"pr": fmt.Sprint(st.PR), "head": text.ShortSHA(st.HeadSHA),
		"round": fmt.Sprint(st.ReviewRounds), "limit": fmt.Sprint(a.lim.ReviewRounds), "feedback": formula.Untrusted(feedback)})
}

// rebaseNews is the prompt of a session resumed to rebase an approved
// pull request; detail is what the forge said, if anything.
func (a *Agent) rebaseNews(st *State, why, detail string) (string, error) {
	said := "nothing more."
	if detail != "" {
		said = "\n\n" + formula.Untrusted(detail)
	}
	return a.followup(followRebase, map[string]string{"pr": fmt.Sprint(st.PR), "why": why, "attempt": fmt.Sprint(st.Rebases),
		"limit": fmt.Sprint(a.lim.Rebases), "forge_said": said, "primary_branch": a.o.PrimaryBranch})
}

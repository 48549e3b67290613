package dev

import (
	"context"
	"fmt"
	"io/fs"

	"strings"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/phase"
)

// refuse handles a (validated) refusal written instead of a push.
func (a *Agent) refuse(ctx context.Context, st *State, r phase.Result) error {
	cctx, cancel := detached(ctx)
	defer cancel()
	f := a.o.Forge
	var ev strings.Builder
	for _, e := range r.Evidence {
		if e.Line > 0 { // only file:line pointers count as evidence
			fmt.Fprintf(&ev, "- `%s:%d` %s\n", a.quote(e.File), e.Line, a.quote(e.Note))
		}
	}
	reason := a.quote(strings.TrimSpace(r.Reason))
	removeWorktree := func() { a.removeWorkspace(cctx, st) }
	switch r.Status {
	case phase.TooLarge:
		body := fmt.Sprintf("📏 **Dev-agent: Too large for single session**\n\n### Why this can't be implemented as-is\n\n%s\n\n%s"+
			"### Next steps\n\nA maintainer should split this issue or add more detail to the spec.\n%s",
			reason, evidenceBlock(ev.String()), outcomeMarker(ledger.CodeRefusedTooLarge))
		if err := a.postOnce(cctx, st.Issue, "Dev-agent: Too large for single session", body); err != nil {
			return err
		}
		if err := f.AddLabels(cctx, st.Issue, forge.LabelUnderspecified); err != nil {
			return err
		}
		if err := f.RemoveLabels(cctx, st.Issue, forge.LabelBacklog, forge.LabelInProgress); err != nil {
			return err
		}
		removeWorktree()
		return a.terminate(cctx, st, StageRefused, ledger.ReasonRefused, ledger.CodeRefusedTooLarge, reason)
	case phase.AlreadyDone:
		if ev.Len() == 0 {
			return a.block(cctx, st, ledger.CodeBuilderNoEvidence,
				"The model said this is already done but gave no file:line evidence.", "reason: "+reason)
		}
		body := fmt.Sprintf("✅ **Dev-agent: Already implemented**\n\n### Existing implementation\n\n%s\n\n%s\nClosing as already implemented.\n%s",
			reason, ev.String(), outcomeMarker(ledger.CodeRefusedAlreadyDone))
		if err := a.postOnce(cctx, st.Issue, "Dev-agent: Already implemented", body); err != nil {
			return err
		}
		if err := f.SetAssignees(cctx, st.Issue, nil); err != nil {
			return err
		}
		if err := f.CloseIssue(cctx, st.Issue); err != nil {
			return err
		}
		if err := f.RemoveLabels(cctx, st.Issue, forge.LabelInProgress, forge.LabelBacklog); err != nil {
			return err
		}
		removeWorktree()
		return a.terminate(cctx, st, StageRefused, ledger.ReasonRefused, ledger.CodeRefusedAlreadyDone, reason)
	case phase.UnmetDependency:
		dep := ""
		if r.Dependency > 0 {
			dep = fmt.Sprintf("\n\n**Depends on:** #%d", r.Dependency)
		}
		body := fmt.Sprintf("🚧 **Dev-agent: Unmet dependency**\n\n### Blocked by unmet dependency\n\n%s%s\n\n%s"+
			"The issue goes back to the backlog; it is picked again when its text or the dependency changes.\n%s",
			reason, dep, evidenceBlock(ev.String()), outcomeMarker(ledger.CodeRefusedUnmetDep))
		if err := a.postOnce(cctx, st.Issue, "Dev-agent: Unmet dependency", body); err != nil {
			return err
		}
		issue, err := f.GetIssue(cctx, st.Issue)
		if err != nil {
			return err
		}
		if err := a.saveRefusal(st.Issue, refusalRecord{Body: bodyHash(issue.Body), Dependency: r.Dependency}); err != nil {
			return err
		}
		if err := f.SetAssignees(cctx, st.Issue, nil); err != nil {
			return err
		}
		if err := f.RemoveLabels(cctx, st.Issue, forge.LabelInProgress); err != nil {
			return err
		}
		if err := f.AddLabels(cctx, st.Issue, forge.LabelBacklog); err != nil {
			return err
		}
		removeWorktree()
		return a.terminate(cctx, st, StageRefused, ledger.ReasonRefused, ledger.CodeRefusedUnmetDep, reason)
	}
	return a.block(cctx, st, ledger.Code("builder.bad_result"),
		fmt.Sprintf("The model wrote a refusal of unknown status %q.", r.Status), "")
}

func evidenceBlock(ev string) string {
	if ev == "" {
		return ""
	}
	return "### Evidence\n\n" + ev + "\n"
}

// postOnce posts body unless a comment of the bot already carries title
// (anyone else can write the title to suppress the refusal comment).
func (a *Agent) postOnce(ctx context.Context, n int64, title, body string) error {
	me, err := a.identity(ctx)
	if err != nil {
		return err
	}
	cs, err := a.o.Forge.ListComments(ctx, n)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.Author == me && strings.Contains(c.Body, title) {
			return nil
		}
	}
	_, err = a.o.Forge.CreateComment(ctx, n, body)
	return err
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

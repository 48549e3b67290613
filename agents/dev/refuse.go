package dev

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"strings"

	"github.com/disinto/disinto/lib/forge"
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

// refusalRecord remembers an unmet-dependency refusal for one body text.
type refusalRecord struct {
	Body       string `json:"body_sha256"`
	Dependency int64  `json:"dependency,omitempty"`
}

func (a *Agent) refusalsPath() string { return filepath.Join(a.st.root, "refusals.json") }

func (a *Agent) loadRefusals() map[int64]refusalRecord {
	out := map[int64]refusalRecord{}
	data, err := os.ReadFile(a.refusalsPath())
	if err == nil {
		_ = json.Unmarshal(data, &out)
	}
	return out
}

func (a *Agent) saveRefusal(n int64, r refusalRecord) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	all := a.loadRefusals()
	all[n] = r
	data, err := json.Marshal(all)
	if err != nil {
		return fmt.Errorf("encode refusals: %w", err)
	}
	if err := os.MkdirAll(a.st.root, 0o750); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	return writeAtomic(a.refusalsPath(), data)
}

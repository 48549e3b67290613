package planner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// MemoryPath is the planner's memory in the ops repository (spec 40
// §2.6).
const MemoryPath = "knowledge/planner-memory.md"

// MemoryEvery is how many runs pass between two memory summaries.
const MemoryEvery = 5

// OpsForge is what the planner reads and proposes on the ops repository
// through the forge, as its bot.
type OpsForge interface {
	ops.PullRequests
	GetBranch(ctx context.Context, name string) (forge.Branch, error)
	GetPull(ctx context.Context, n int64) (forge.PullRequest, error)
	CreateComment(ctx context.Context, n int64, body string) (forge.Comment, error)
	EnsureLabels(ctx context.Context) ([]forge.LabelName, error)
	AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error
}

var _ OpsForge = (*forge.RepoClient)(nil)

// opsView is the ops repository as the run read it.
type opsView struct {
	files ops.Files
	head  string
	// tree and memory are the files' texts ("" when missing).
	tree, memory string
	// requests are the procurement slugs already filed, by directory.
	requests map[string][]string
}

// summarizedRe finds the run the memory was last summarised at.
var summarizedRe = regexp.MustCompile(`<!--\s*summarized-through-run:\s*(\d+)\s*-->`)

// summarizedThrough is the run the memory was last summarised at; -1
// when there is no memory.
func (v *opsView) summarizedThrough() int {
	if v == nil || strings.TrimSpace(v.memory) == "" {
		return -1
	}
	m := summarizedRe.FindStringSubmatch(v.memory)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// memoryDue reports whether run n rewrites the memory: when there is
// none, or MemoryEvery runs after the last summary.
func (v *opsView) memoryDue(n int) bool {
	s := v.summarizedThrough()
	return s < 0 || n-s >= MemoryEvery
}

// filed reports whether a request with slug exists in any of the
// directories a human moves requests through (spec 40 §6 A).
func (v *opsView) filed(project, slug string) bool {
	if v == nil {
		return false
	}
	name := path.Base(ProcurementPath(project, slug))
	for _, names := range v.requests {
		for _, n := range names {
			if path.Base(n) == name {
				return true
			}
		}
	}
	return false
}

// readOps fetches the ops checkout and reads what the run needs: the
// tree, the memory and the procurement requests. nil without an ops
// repository.
func (a *Agent) readOps(ctx context.Context) (*opsView, error) {
	if a.o.Ops == nil {
		return nil, nil
	}
	if _, err := a.o.Ops.Sync(ctx); err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	files, head, err := a.o.Ops.Local(ctx)
	if err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	v := &opsView{files: files, head: head, requests: map[string][]string{}}
	if head == "" {
		return v, nil // an empty ops repository: no tree, no memory yet
	}
	if v.tree, err = readText(files, a.treePath()); err != nil {
		return nil, err
	}
	if v.memory, err = readText(files, MemoryPath); err != nil {
		return nil, err
	}
	for _, dir := range []string{ProcurementDir, ApprovedDir, FiredDir} {
		tf, err := files.List(dir)
		if err != nil {
			return nil, fmt.Errorf("planner: list %s: %w", dir, err)
		}
		for _, f := range tf {
			if strings.HasSuffix(f.Path, ".md") {
				v.requests[dir] = append(v.requests[dir], f.Path)
			}
		}
	}
	return v, nil
}

// readText reads a file of the ops repository, "" when it is missing.
func readText(f ops.Files, p string) (string, error) {
	data, err := f.Read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("planner: read %s of the ops repository: %w", p, err)
	}
	return string(data), nil
}

// opsWrite is what a run writes to the ops repository.
type opsWrite struct {
	// own are the planner's files, committed directly (tree, memory).
	own []git.FileChange
	// requests are the procurement requests, proposed for a human.
	requests []git.FileChange
	slugs    []string
}

// opsResult says where the writes landed.
type opsResult struct {
	// Commit is the direct commit of the planner's files ("" for none).
	Commit string
	// TreePR is the pull request of the planner's files when the primary
	// branch takes no direct commit; PR the pull request of the
	// procurement requests; Branch the branch of either (the run's).
	TreePR, PR int64
	Branch     string
	// Head is the ops head the run leaves: its own commit's, else the one
	// it read.
	Head string
}

// Branch is the ops branch of run id at t: planner/run-<UTC date>-<run
// id>, so two runs of a day never share one (spec 40 §2.9.7).
func Branch(t time.Time, runID string) string {
	return "planner/run-" + t.UTC().Format(time.DateOnly) + "-" + runID
}

// treeBranchSuffix tells the branch of a run's tree pull request from
// that of its procurement requests.
const treeBranchSuffix = "-tree"

// PRTitle is the title of the planner's ops pull request of day t.
func PRTitle(t time.Time) string { return "chore: planner run " + t.UTC().Format(time.DateOnly) }

// writeOps commits the planner's own files directly to the ops primary
// branch, the commit message naming the run (the audit trail), and
// proposes the procurement requests in a pull request from the run's
// branch, labelled for the vault's approvers. When the primary branch
// takes no direct commit, the planner's files go in a pull request of
// their own, so that a later run's tree supersedes it without touching
// the requests.
func (a *Agent) writeOps(ctx context.Context, runID string, w opsWrite, v *opsView) (opsResult, error) {
	res := opsResult{Head: v.head}
	now := a.now()
	if len(w.own) > 0 {
		msg := fmt.Sprintf("planner: run %s: prerequisite tree and memory\n\nWritten by the planner bot; the run is %s in the ledger.", runID, runID)
		sha, err := a.o.Ops.Commit(ctx, msg, func(ops.Files) ([]git.FileChange, error) { return w.own, nil })
		switch {
		case errors.Is(err, ops.ErrProtected):
			res.Branch = Branch(now, runID)
			body := fmt.Sprintf("Planner run %s: the prerequisite tree and the planner's memory. The ops primary branch takes no "+
				"direct commit from the planner; merge to let the graph and the next run see them. A later run's tree supersedes this one.\n",
				forge.Neutralise(runID))
			pr, err := a.o.Ops.Propose(ctx, a.o.OpsForge, ops.Proposal{Branch: res.Branch + treeBranchSuffix, Title: PRTitle(now),
				Body: body, Message: msg, Changes: w.own})
			if err != nil {
				return res, err
			}
			res.TreePR = pr.Number
		case err != nil:
			return res, err
		case sha != "":
			res.Commit, res.Head = sha, sha
		}
	}
	if len(w.requests) == 0 {
		return res, nil
	}
	res.Branch = Branch(now, runID)
	body := fmt.Sprintf("Planner run %s: procurement requests for a human decision or resource (nothing here is executed):\n\n",
		forge.Neutralise(runID))
	for _, s := range w.slugs {
		body += "- `" + ProcurementPath(a.o.Project, s) + "`\n"
	}
	body += "\nMerge when the requests are right; the planner reads the outcome from `vault/approved/` and `vault/fired/`.\n"
	pr, err := a.o.Ops.Propose(ctx, a.o.OpsForge, ops.Proposal{Branch: res.Branch, Title: PRTitle(now) + ": procurement requests",
		Body: body, Message: fmt.Sprintf("planner: run %s: procurement requests", runID), Changes: w.requests})
	if err != nil {
		return res, err
	}
	res.PR = pr.Number
	// Labels tell the approvers what waits; a missing label costs nothing else.
	if _, err := a.o.OpsForge.EnsureLabels(ctx); err == nil {
		_ = a.o.OpsForge.AddLabels(ctx, pr.Number, forge.LabelVault, forge.LabelPendingApproval)
	}
	return res, nil
}

// pendingPR is an ops pull request of an earlier run, still open: its
// requests count as requested, and a newer tree supersedes its tree.
type pendingPR struct {
	Number int64    `json:"number"`
	Tree   bool     `json:"tree,omitempty"`
	Slugs  []string `json:"slugs,omitempty"`
}

// stillOpen returns the pull requests of prs that are still open, one
// request each.
func (a *Agent) stillOpen(ctx context.Context, prs []pendingPR) ([]pendingPR, error) {
	var out []pendingPR
	for _, p := range prs {
		pr, err := a.o.OpsForge.GetPull(ctx, p.Number)
		if errors.Is(err, forge.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("planner: ops pull request #%d: %w", p.Number, err)
		}
		if pr.State == forge.StateOpen && !pr.Merged {
			out = append(out, p)
		}
	}
	return out, nil
}

// supersede closes the earlier tree pull requests with a comment naming
// the one that replaces them; their commits stay on their branches.
func (a *Agent) supersede(ctx context.Context, pending []pendingPR, by int64, runID string) ([]pendingPR, error) {
	var keep []pendingPR
	for _, p := range pending {
		if !p.Tree || p.Number == by {
			keep = append(keep, p)
			continue
		}
		body := fmt.Sprintf("Superseded by #%d, the tree and memory of planner run %s.", by, forge.Neutralise(runID))
		if _, err := a.o.OpsForge.CreateComment(ctx, p.Number, body); err != nil {
			return pending, fmt.Errorf("planner: supersede #%d: %w", p.Number, err)
		}
		if err := a.o.OpsForge.ClosePull(ctx, p.Number); err != nil {
			return pending, fmt.Errorf("planner: supersede #%d: %w", p.Number, err)
		}
	}
	return keep, nil
}

// RequestBody renders procurement request q of project (spec 40 §2.4):
// the six headings, the human's steps numbered, the last one asking for
// the result in the issue. resolve titles the issues it unblocks.
func RequestBody(q Procurement, title func(int64) string) string {
	n := func(s string) string { return forge.Neutralise(strings.TrimSpace(s)) }
	var b strings.Builder
	fmt.Fprintf(&b, "# Request: %s\n\n## What\n\n%s\n\n## Why\n\n%s\n\n## Human action\n\n", n(oneLine(q.Title)), n(q.What), n(q.Why))
	steps := append([]string(nil), q.HumanAction...)
	const paste = "Paste the result into the issue."
	if last := strings.ToLower(steps[len(steps)-1]); !strings.Contains(last, "paste") {
		steps = append(steps, paste)
	}
	for i, s := range steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, n(oneLine(s)))
	}
	fmt.Fprintf(&b, "\n## Factory will then\n\n%s\n\n## Unblocks\n\n", n(q.FactoryWill))
	if len(q.Unblocks) == 0 {
		b.WriteString("- (no issue yet)\n")
	}
	for _, u := range q.Unblocks {
		t := ""
		if title != nil {
			t = title(u)
		}
		if t != "" {
			fmt.Fprintf(&b, "- #%d — %s\n", u, n(oneLine(t)))
		} else {
			fmt.Fprintf(&b, "- #%d\n", u)
		}
	}
	return b.String()
}

// memoryText is the memory file the run writes: the run marker, then the
// session's text.
func memoryText(run int, day time.Time, body string) string {
	return fmt.Sprintf("<!-- summarized-through-run: %d -->\n<!-- Last updated: %s -->\n%s\n", run, day.UTC().Format(time.DateOnly), strings.TrimRight(body, "\n"))
}

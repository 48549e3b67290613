package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/graph"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/text"
)

// Limits of what the session is shown.
const (
	openShown     = 200 // open issues listed
	closedShown   = 50  // recently closed issues (spec 40 §2.7)
	stuckIssues   = 10  // tree issues whose comments are read
	stuckComments = 10  // comments read per tree issue (spec 40 §2.7)
	bodyExcerpt   = 1200
	lineExcerpt   = 300
)

// tracker is the tracker as the run read it.
type tracker struct {
	open, closed, predictions []forge.Issue
	// comments are the last comments of the open issues the tree names.
	comments map[int64][]forge.Comment
	// shown is the origin of what the session is shown (lib/provenance):
	// the issues the run files carry it, so that outsider text never
	// reaches the backlog as the planner's word.
	shown provenance.Shown
}

// tasks is the trusted part of the prompt: the budget, whether the
// memory is due, the requests already filed and where the outbox is.
func tasks(runNo int, memoryDue bool, predictions int, v *opsView, project string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This is planner run %d of %s.\n", runNo, project)
	fmt.Fprintf(&b, "Issue budget: at most max(%d, predictions triaged + 1) new issues; with all %d open predictions triaged that is %d. "+
		"The follow-ups of actioned predictions are filed first, then your other issues in order, while the budget lasts; "+
		"issues whose title an open issue has are not filed.\n", MinBudget, predictions, Budget(predictions))
	if memoryDue {
		b.WriteString("The memory is due this run: write `memory` (the whole file, fewer than 100 lines).\n")
	} else {
		b.WriteString("The memory is not due this run: leave `memory` out.\n")
	}
	if v == nil {
		b.WriteString("There is no ops repository: the tree and the memory are not kept this run.\n")
	} else {
		var slugs []string
		for dir, names := range v.requests {
			for _, n := range names {
				slugs = append(slugs, dir+"/"+strings.TrimSuffix(strings.TrimPrefix(pathBase(n), project+"-"), ".md"))
			}
		}
		sort.Strings(slugs)
		if len(slugs) == 0 {
			b.WriteString("No procurement request is filed yet.\n")
		} else {
			fmt.Fprintf(&b, "Procurement requests already filed (directory/slug; a slug here is never requested again): %s.\n", strings.Join(slugs, ", "))
		}
	}
	b.WriteString("Write the plan file named in the formula (also $" + EnvPlan + "), even when you change nothing.\n")
	return b.String()
}

// pathBase is the last element of a slash path.
func pathBase(p string) string { return p[strings.LastIndex(p, "/")+1:] }

// predictionsText renders the open predictions for triage (untrusted).
func predictionsText(ps []forge.Issue) string {
	if len(ps) == 0 {
		return "none\n"
	}
	var b strings.Builder
	for _, i := range ps {
		fmt.Fprintf(&b, "#### #%d %s\n\n%s\n\n", i.Number, oneLine(i.Title), text.Clip(strings.TrimSpace(i.Body), bodyExcerpt))
	}
	return b.String()
}

// issuesText renders a list of issues, one line each (untrusted).
func issuesText(is []forge.Issue, limit int) string {
	if len(is) == 0 {
		return "none\n"
	}
	var b strings.Builder
	for k, i := range is {
		if k == limit {
			fmt.Fprintf(&b, "- … %d more\n", len(is)-limit)
			break
		}
		labels := make([]string, 0, len(i.Labels))
		for _, l := range i.Labels {
			labels = append(labels, string(l))
		}
		fmt.Fprintf(&b, "- #%d [%s] %s\n", i.Number, strings.Join(labels, ", "), text.Clip(oneLine(i.Title), lineExcerpt))
	}
	return b.String()
}

// commentsText renders the last comments of the tree's open issues, for
// the bounce and churn signals (untrusted).
func commentsText(t tracker) string {
	if len(t.comments) == 0 {
		return "none\n"
	}
	nums := make([]int64, 0, len(t.comments))
	for n := range t.comments {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	var b strings.Builder
	for _, n := range nums {
		fmt.Fprintf(&b, "#### #%d\n\n", n)
		for _, c := range t.comments[n] {
			fmt.Fprintf(&b, "- %s: %s\n", c.Author, text.Clip(oneLine(c.Body), lineExcerpt))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// treeIssues are the open issues the tree's open prerequisites and
// objectives name, in tree order, at most stuckIssues.
func treeIssues(treeText string, open []forge.Issue) []int64 {
	isOpen := map[int64]bool{}
	for _, i := range open {
		isOpen[i.Number] = true
	}
	var out []int64
	seen := map[int64]bool{}
	add := func(n int64) {
		if isOpen[n] && !seen[n] && len(out) < stuckIssues {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, o := range graph.ParseTree(treeText) {
		add(o.Issue)
		for _, q := range o.Prereqs {
			if !q.Done {
				for _, n := range q.Issues {
					add(n)
				}
			}
		}
	}
	return out
}

// newest returns issues sorted by last update, newest first, at most n.
func newest(issues []forge.Issue, n int) []forge.Issue {
	out := append([]forge.Issue(nil), issues...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/graph"
)

// TreeTitle heads the tree file (spec 40 §2.4).
const TreeTitle = "# Prerequisite Tree"

// ProcurementDir is where procurement requests wait in the ops
// repository; ApprovedDir and FiredDir are where a human moves them
// (spec 40 §6 A).
const (
	ProcurementDir = "vault/pending"
	ApprovedDir    = "vault/approved"
	FiredDir       = "vault/fired"
)

// ProcurementPath is the file of request slug of project.
func ProcurementPath(project, slug string) string {
	return ProcurementDir + "/" + project + "-" + slug + ".md"
}

// Render writes the tree in the format lib/graph parses (graph.ParseTree,
// the one parser of the tree): a title, the date, then per objective its
// heading, one checkbox line per prerequisite and the status line. ref
// resolves the refs of issues this run filed (0: not filed, the
// prerequisite keeps its text only); a prerequisite waiting for a
// procurement request names the request's file.
func (t *Tree) Render(project string, day time.Time, ref func(string) int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n<!-- Last updated: %s -->\n", TreeTitle, day.UTC().Format(time.DateOnly))
	for _, o := range t.Objectives {
		b.WriteString("\n## Objective: " + oneLine(o.Name))
		if o.Issue > 0 {
			fmt.Fprintf(&b, " (#%d)", o.Issue)
		}
		b.WriteString("\n")
		for _, q := range o.Prerequisites {
			box := " "
			if q.Done {
				box = "x"
			}
			line := oneLine(q.Text)
			n := q.Issue
			if q.Ref != "" && ref != nil {
				n = ref(q.Ref)
			}
			if n > 0 && !strings.Contains(line, fmt.Sprintf("#%d", n)) {
				line += fmt.Sprintf(" (#%d)", n)
			}
			if q.Procurement != "" {
				line += " blocked-on-vault (" + ProcurementPath(project, q.Procurement) + ")"
			}
			fmt.Fprintf(&b, "- [%s] %s\n", box, line)
		}
		b.WriteString("Status: " + o.Status)
		if o.Reason != "" && o.Status != "DONE" {
			b.WriteString(" — " + oneLine(o.Reason))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// checkRoundTrip parses text with lib/graph's parser and reports any
// difference from t: each objective, prerequisite, done mark and status
// must come back as written, so the graph sees the tree the planner
// meant.
func (t *Tree) checkRoundTrip(text string) error {
	got := graph.ParseTree(text)
	if len(got) != len(t.Objectives) {
		return fmt.Errorf("the written tree parses to %d objectives, not %d", len(got), len(t.Objectives))
	}
	for i, o := range t.Objectives {
		g := got[i]
		if g.Name != oneLine(o.Name) || g.Status != o.Status || g.Issue != o.Issue || len(g.Prereqs) != len(o.Prerequisites) {
			return fmt.Errorf("objective %q does not parse back as written", o.Name)
		}
		for j, q := range o.Prerequisites {
			if g.Prereqs[j].Done != q.Done {
				return fmt.Errorf("prerequisite %q of %q does not parse back as written", q.Text, o.Name)
			}
		}
	}
	return nil
}

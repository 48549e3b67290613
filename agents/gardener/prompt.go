package gardener

import (
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// tasks is the trusted part of the prompt: what to decide of each issue
// and which AGENTS.md files to bring up to date.
func tasks(ask []forge.Issue, asked map[int64][]Verdict, stale int) string {
	var b strings.Builder
	if len(ask) > 0 {
		b.WriteString("Classify each issue below; write one proposal per issue to the proposals file.\n\n")
		for _, i := range ask {
			kinds := make([]string, 0, len(asked[i.Number]))
			for _, k := range asked[i.Number] {
				kinds = append(kinds, string(k))
			}
			fmt.Fprintf(&b, "- #%d: one of %s (or skip)\n", i.Number, strings.Join(kinds, ", "))
		}
	}
	if stale > 0 {
		fmt.Fprintf(&b, "\nBring the %d AGENTS.md files listed below up to date in the working directory "+
			"(leave line 1, the watermark, to the orchestrator).\n", stale)
	}
	return b.String()
}

// docText lists the stale AGENTS.md files with the files added and
// removed since their watermark (file names are the repository's:
// untrusted).
func docText(stale []docFile) string {
	var b strings.Builder
	for _, d := range stale {
		fmt.Fprintf(&b, "- %s", d.Path)
		if len(d.New) > 0 {
			fmt.Fprintf(&b, "; new since it was reviewed: %s", strings.Join(d.New, ", "))
		}
		if len(d.Deleted) > 0 {
			fmt.Fprintf(&b, "; deleted: %s", strings.Join(d.Deleted, ", "))
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return "none\n"
	}
	return b.String()
}

// issueText renders the issues to judge (untrusted).
func issueText(ask []forge.Issue) string {
	var b strings.Builder
	for _, i := range ask {
		labels := make([]string, 0, len(i.Labels))
		for _, l := range i.Labels {
			labels = append(labels, string(l))
		}
		body := i.Body
		if len(body) > 4096 {
			body = body[:4096] + "…"
		}
		fmt.Fprintf(&b, "### #%d %s\nlabels: %s\n\n%s\n\n", i.Number, i.Title, strings.Join(labels, ", "), body)
	}
	return b.String()
}

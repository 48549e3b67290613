package filer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/deps"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/sprint"
)

// issueBody is the body of sub-issue sub of spec: its text, then a
// "## Depends on" list of its prerequisites' issue numbers (the syntax of
// lib/deps, which the dev agent's gate reads), then a "## Sprint" section
// that ends the list, and last the decomposed-from marker. The sprint's
// text is neutralised so that it cannot carry a hidden marker.
func issueBody(spec sprint.Spec, sub sprint.SubIssue, prereq []int64) string {
	var b strings.Builder
	if t := strings.TrimSpace(sub.Body); t != "" {
		b.WriteString(forge.Neutralise(sub.Body))
		b.WriteString("\n\n")
	}
	if len(prereq) > 0 {
		b.WriteString("## Depends on\n")
		for _, n := range prereq {
			fmt.Fprintf(&b, "- #%d\n", n)
		}
		b.WriteString("\n")
	}
	// A heading of level 2 closes the dependency section, so the vision
	// number below is not read as a dependency.
	fmt.Fprintf(&b, "## Sprint\nFiled from sprint `%s` (`%s`) of vision #%d.\n\n", spec.Slug, sprint.Path(spec.Slug), spec.Vision)
	b.WriteString(forge.DecomposedFrom{Vision: int64(spec.Vision), Sprint: spec.Slug, ID: sub.ID}.String())
	return b.String()
}

// checkBodies makes sure that the dependencies of every sub-issue of spec
// will be read back from its body exactly: a body that hides the list (an
// unclosed code fence) would let the dev agent start the issue before its
// prerequisites. Placeholder numbers stand in for the ones filing assigns.
func checkBodies(spec sprint.Spec) error {
	placeholder := func(i int) int64 { return int64(900000000 + i) }
	pos := map[string]int{}
	for i, sub := range spec.SubIssues {
		pos[sub.ID] = i
	}
	for _, sub := range spec.SubIssues {
		var want []int64
		for _, d := range sub.DependsOn {
			want = append(want, placeholder(pos[d]))
		}
		got := deps.Parse(issueBody(spec, sub, want))
		for _, n := range want {
			if !slices.Contains(got, n) {
				return refuse("%s: sub-issue %q: its body hides its %q list from the dependency parser (an unclosed code fence?)",
					sprint.Path(spec.Slug), sub.ID, "## Depends on")
			}
		}
		if slices.Contains(got, int64(spec.Vision)) {
			return refuse("%s: sub-issue %q: its body makes it depend on its own vision #%d", sprint.Path(spec.Slug), sub.ID, spec.Vision)
		}
	}
	return nil
}

// numbers renders issue numbers as "#12, #13".
func numbers(ns []int64) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = "#" + strconv.FormatInt(n, 10)
	}
	return strings.Join(s, ", ")
}

// joinInts renders issue numbers for a marker field: "12,13".
func joinInts(ns []int64) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, ",")
}

// filedComment is the filer's comment on a sprint pull request it filed:
// which issue each sub-issue became, and the marker that says it is done
// (W-FI-9). repo is the project's owner/name, so that the references
// point at the project, not at the ops repository.
func filedComment(repo string, pr int64, sprints []filedSprint) (string, error) {
	var b strings.Builder
	b.WriteString("Filed the sub-issues of this sprint:\n")
	var slugs []string
	var all []int64
	for _, s := range sprints {
		fmt.Fprintf(&b, "\n**%s** (vision %s#%d)\n", s.spec.Slug, repo, s.vision.Number)
		for i, sub := range s.spec.SubIssues {
			fmt.Fprintf(&b, "- `%s` → %s#%d\n", sub.ID, repo, s.issues[i])
		}
		slugs = append(slugs, s.spec.Slug)
		all = append(all, s.issues...)
	}
	m, err := forge.Marker{Kind: forge.MarkerSprintFiled, Fields: map[string]string{
		"pr": strconv.FormatInt(pr, 10), "sprints": strings.Join(slugs, ","), "issues": joinInts(all)}}.String()
	if err != nil {
		return "", err
	}
	b.WriteString("\n" + m)
	return b.String(), nil
}

// refusedComment is the filer's one comment on a sprint pull request it
// will not file.
func refusedComment(pr int64, reason string) (string, error) {
	m, err := forge.Marker{Kind: forge.MarkerSprintRefused, Fields: map[string]string{"pr": strconv.FormatInt(pr, 10)}}.String()
	if err != nil {
		return "", err
	}
	return "The filer did not file this sprint; no issue was created:\n\n" +
		"```\n" + forge.Neutralise(strings.ReplaceAll(reason, "```", "'''")) + "\n```\n\n" +
		"Fix the sprint file in a new pull request, or delete this comment to make the filer try again.\n\n" + m, nil
}

// completedComment is the filer's comment on a vision issue whose
// sub-issues are all closed (spec 50 §5), with the marker that makes it
// once.
func completedComment(vision int64, bot string, subs []forge.Issue, now time.Time) (string, error) {
	m, err := forge.Marker{Kind: forge.MarkerVisionComplete, Fields: map[string]string{"vision": strconv.FormatInt(vision, 10)}}.String()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(forge.VisionCompletedHeading + "\n\n")
	b.WriteString("All sub-issues of this vision issue were implemented and closed:\n\n")
	for _, s := range subs {
		note := ""
		if s.HasLabel(forge.LabelWontfix) {
			note = " (closed as " + string(forge.LabelWontfix) + ")"
		}
		fmt.Fprintf(&b, "- #%d %s%s\n", s.Number, forge.Neutralise(s.Title), note)
	}
	fmt.Fprintf(&b, "\n_Automated closure by %s · %s UTC_\n\n%s", bot, now.UTC().Format("2006-01-02 15:04"), m)
	return b.String(), nil
}

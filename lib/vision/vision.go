// Package vision is the project's VISION.md as the factory knows it: the
// template disinto init seeds into a new project, which the planner
// recognises as no vision at all, and the issue forms init seeds beside
// it for bug reports and feature requests.
package vision

import (
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// Path is the vision in the project repository.
const Path = "VISION.md"

// templateMarker marks the seeded template.
var templateMarker = "<!-- disinto:" + forge.MarkerVisionTemplate + " -->"

// Template is the VISION.md of a new project, for a maintainer to
// replace with the project's vision.
func Template(project string) string {
	return templateMarker + `
# Vision of ` + project + `

This file is a template: the factory's planner plans nothing from it. Replace
its text, this note and the comment line above included, with what the
project is for and what "done" looks like. The planner keeps a tree of
objectives and prerequisites from it and files the issues at the current
constraints.

## Objectives

Write one heading per objective, each with the outcome that shows it is met:

## Constraints

What must stay true: budgets, platforms, what the project must never do.
`
}

// IsTemplate reports whether text is no vision: empty, or still the
// template (its marker is there).
func IsTemplate(text string) bool {
	if strings.TrimSpace(text) == "" {
		return true
	}
	for _, m := range forge.ParseMarkers(text) {
		if m.Kind == forge.MarkerVisionTemplate {
			return true
		}
	}
	return false
}

// IssueTemplateDir holds the project's issue forms (Forgejo reads
// .forgejo/ISSUE_TEMPLATE; spec 40 §0).
const IssueTemplateDir = ".forgejo/ISSUE_TEMPLATE"

// IssueTemplates are the issue forms of a new project, path → content:
// a bug report, labelled for the reproduce agent, and a feature request
// in the shape the gardener's quality gate accepts.
func IssueTemplates() map[string]string {
	return map[string]string{
		IssueTemplateDir + "/bug.yaml": fmt.Sprintf(`name: Bug report
about: Something is broken
title: "bug: "
labels: [%q]
body:
  - type: textarea
    id: what
    attributes:
      label: What happened
      description: What you did, what you saw.
    validations:
      required: true
  - type: textarea
    id: expected
    attributes:
      label: What you expected
    validations:
      required: true
  - type: textarea
    id: steps
    attributes:
      label: Steps to reproduce
      description: From a fresh start, one step a line.
    validations:
      required: true
  - type: textarea
    id: logs
    attributes:
      label: Logs or error messages
      render: text
`, string(forge.LabelBugReport)),
		IssueTemplateDir + "/feature.yaml": `name: Feature request
about: A capability that is missing
title: "feature: "
body:
  - type: textarea
    id: problem
    attributes:
      label: Problem
      description: What cannot be done today, and who needs it.
    validations:
      required: true
  - type: textarea
    id: solution
    attributes:
      label: Proposed solution
    validations:
      required: true
  - type: textarea
    id: affected
    attributes:
      label: Affected files
      description: The files or components you expect to change, if you know them.
  - type: textarea
    id: acceptance
    attributes:
      label: Acceptance criteria
      description: One checkable outcome a line.
    validations:
      required: true
`,
	}
}

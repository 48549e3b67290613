package forge

import "fmt"

// LabelName is a label of the factory's vocabulary. Every label string of
// the codebase is defined here, once.
type LabelName string

// The label vocabulary (spec 00 §5).
const (
	LabelBacklog              LabelName = "backlog"
	LabelPriority             LabelName = "priority"
	LabelInProgress           LabelName = "in-progress"
	LabelBlocked              LabelName = "blocked"
	LabelTechDebt             LabelName = "tech-debt"
	LabelUnderspecified       LabelName = "underspecified"
	LabelVision               LabelName = "vision"
	LabelAction               LabelName = "action"
	LabelBugReport            LabelName = "bug-report"
	LabelNeedsTriage          LabelName = "needs-triage"
	LabelReproduced           LabelName = "reproduced"
	LabelCannotReproduce      LabelName = "cannot-reproduce"
	LabelInTriage             LabelName = "in-triage"
	LabelRejected             LabelName = "rejected"
	LabelPredictionUnreviewed LabelName = "prediction/unreviewed"
	LabelPredictionDismissed  LabelName = "prediction/dismissed"
	LabelPredictionActioned   LabelName = "prediction/actioned"
	LabelFormula              LabelName = "formula"
	LabelVault                LabelName = "vault"
	LabelPendingApproval      LabelName = "pending-approval"
	// LabelWontfix marks an issue closed without being done: it does not
	// satisfy the issues that depend on it (W-DP-10). The forge API has no
	// close reason, so the label says it.
	LabelWontfix LabelName = "wontfix"
)

// Label is a label definition: name, colour (#rrggbb) and description.
type Label struct {
	ID          int64
	Name        LabelName
	Color       string
	Description string
}

// Registry is the full label vocabulary with one colour and description
// each; provisioning creates exactly these, and nothing else creates labels.
var registry = []Label{
	{Name: LabelBacklog, Color: "#0075ca", Description: "Ready for implementation"},
	{Name: LabelPriority, Color: "#f59e0b", Description: "Take before other backlog issues"},
	{Name: LabelInProgress, Color: "#e4e669", Description: "An agent is working on this"},
	{Name: LabelBlocked, Color: "#d73a4a", Description: "Stuck: needs a human"},
	{Name: LabelTechDebt, Color: "#cfd3d7", Description: "Pre-existing problem found in review"},
	{Name: LabelUnderspecified, Color: "#fbca04", Description: "Too large or too vague to implement as written"},
	{Name: LabelVision, Color: "#0e8a16", Description: "Goal anchor for planning"},
	{Name: LabelAction, Color: "#1d76db", Description: "Formula dispatch task"},
	{Name: LabelBugReport, Color: "#e11d48", Description: "User-facing bug with reproduction steps"},
	{Name: LabelNeedsTriage, Color: "#f9d0c4", Description: "Needs triage by a human"},
	{Name: LabelReproduced, Color: "#0e8a16", Description: "Bug reproduced, cause known"},
	{Name: LabelCannotReproduce, Color: "#cccccc", Description: "Bug could not be reproduced"},
	{Name: LabelInTriage, Color: "#1d76db", Description: "Reproduced, cause under investigation"},
	{Name: LabelRejected, Color: "#cccccc", Description: "Cannot reproduce or out of scope"},
	{Name: LabelPredictionUnreviewed, Color: "#a2eeef", Description: "New prediction awaiting the planner"},
	{Name: LabelPredictionDismissed, Color: "#d73a4a", Description: "Prediction dismissed with a reason"},
	{Name: LabelPredictionActioned, Color: "#28a745", Description: "Prediction promoted or handled"},
	{Name: LabelFormula, Color: "#5319e7", Description: "Formula task, not for the dev agent"},
	{Name: LabelVault, Color: "#b60205", Description: "Vault action awaiting approval"},
	{Name: LabelPendingApproval, Color: "#fef2c0", Description: "Waiting for human approval"},
	{Name: LabelWontfix, Color: "#ffffff", Description: "Closed without being done; does not satisfy dependants"},
}

// Registry returns a copy of the label vocabulary.
func Registry() []Label {
	return append([]Label(nil), registry...)
}

// Definition returns the registry entry for name.
func Definition(name LabelName) (Label, bool) {
	for _, l := range registry {
		if l.Name == name {
			return l, true
		}
	}
	return Label{}, false
}

// Validate reports whether name is part of the vocabulary.
func (n LabelName) Validate() error {
	if _, ok := Definition(n); !ok {
		return fmt.Errorf("label %q: not in the label registry", string(n))
	}
	return nil
}

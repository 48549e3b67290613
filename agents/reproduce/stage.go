package reproduce

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// Mode is what a run does with a bug report.
type Mode string

// The modes, one per stage of the bug-report state machine.
const (
	// ModeReproduce follows the report's steps in the browser: does the
	// bug happen, and is its cause obvious?
	ModeReproduce Mode = "reproduce"
	// ModeTriage traces a reproduced bug whose cause is not obvious to
	// its root causes, one fix issue each.
	ModeTriage Mode = "triage"
	// ModeVerify re-runs the report's steps once every fix issue filed
	// for it is closed: is the bug gone?
	ModeVerify Mode = "verify"
)

// formulaName is the formula a mode runs: verify is a reproduction with
// the mode variable set.
func (m Mode) formulaName() string {
	if m == ModeTriage {
		return "triage"
	}
	return "reproduce"
}

// The state machine of a bug report, in labels. bug-report stays on the
// issue until it is closed; the stage labels move, and only this package
// moves them, once per run, from the validated outcome:
//
//	bug-report                      → reproduce
//	bug-report + in-triage          → triage
//	bug-report + in-progress        → verify, once every fix issue is closed
//	bug-report + rejected | blocked → nothing (a human decides)
//
// An issue carrying reproduced or cannot-reproduce without a stage label
// was settled by a human (or by an older factory) and is left alone.
var (
	// parkedLabels stop every run.
	parkedLabels = []forge.LabelName{forge.LabelRejected, forge.LabelBlocked, forge.LabelCannotReproduce}
)

// modeOf is the run an open bug-report issue is due for, by its labels
// alone; verify also needs its fix issues closed (see fixesDone).
func modeOf(i forge.Issue) (Mode, bool) {
	if !i.HasLabel(forge.LabelBugReport) || i.State == forge.StateClosed {
		return "", false
	}
	for _, l := range parkedLabels {
		if i.HasLabel(l) {
			return "", false
		}
	}
	switch {
	case i.HasLabel(forge.LabelInTriage) && i.HasLabel(forge.LabelInProgress):
		// Two stages at once: a human's relabel in flight; wait for it.
		return "", false
	case i.HasLabel(forge.LabelInTriage):
		return ModeTriage, true
	case i.HasLabel(forge.LabelInProgress):
		return ModeVerify, true
	case i.HasLabel(forge.LabelReproduced):
		return "", false
	}
	return ModeReproduce, true
}

// fixMarkerKind is the hidden marker in the body of every fix issue this
// package files: parent=N links it to bug report N, run and cause name
// the session and the cause it was filed for, so that applying one
// outcome again files nothing twice. Only issues authored by the agent's
// own bot count, since anyone can write a marker.
const fixMarkerKind = "bug-fix"

// fixRef is what a fix issue's marker says.
type fixRef struct {
	Parent int64
	Run    string
	Cause  int
}

// fixMarker is the marker line of fix issue ref.
func fixMarker(ref fixRef) string {
	s, _ := forge.Marker{Kind: fixMarkerKind, Fields: map[string]string{
		"parent": strconv.FormatInt(ref.Parent, 10), "run": ref.Run, "cause": strconv.Itoa(ref.Cause),
	}}.String()
	return s // the kind and keys are constants: String cannot fail
}

// fixOf is what fix issue i's marker says; ok is false when i is not one
// of ours (no marker, or written by someone else).
func fixOf(i forge.Issue, bot string) (fixRef, bool) {
	m, ok := i.MarkerBy(fixMarkerKind, bot)
	if !ok {
		return fixRef{}, false
	}
	n, err := strconv.ParseInt(m.Fields["parent"], 10, 64)
	if err != nil || n <= 0 {
		return fixRef{}, false
	}
	k, _ := strconv.Atoi(m.Fields["cause"])
	return fixRef{Parent: n, Run: m.Fields["run"], Cause: k}, true
}

// fixParent is the bug report a fix issue was filed for, 0 when i is not
// one of ours.
func fixParent(i forge.Issue, bot string) int64 {
	ref, _ := fixOf(i, bot)
	return ref.Parent
}

// fixesDone reports whether parent has fix issues and all are closed,
// from the fix issues of every parent (all states).
func fixesDone(parent int64, fixes map[int64][]forge.Issue) bool {
	fs := fixes[parent]
	if len(fs) == 0 {
		return false
	}
	for _, f := range fs {
		if f.State != forge.StateClosed {
			return false
		}
	}
	return true
}

// fixPrefixRe matches the fix: prefixes a title may already carry.
var fixPrefixRe = regexp.MustCompile(`(?i)^\s*(fix\s*:\s*)+`)

// fixTitle is the title of a fix issue for cause (or, when it is empty,
// for the bug report's title): one "fix: " prefix however many the
// text already had, the parent's number at the end, at most 200 runes.
func fixTitle(cause string, parent forge.Issue) string {
	t := strings.TrimSpace(fixPrefixRe.ReplaceAllString(cause, ""))
	if t == "" {
		t = strings.TrimSpace(fixPrefixRe.ReplaceAllString(parent.Title, ""))
	}
	t = strings.Join(strings.Fields(t), " ")
	if r := []rune(t); len(r) > 180 {
		t = string(r[:180]) + "…"
	}
	return fmt.Sprintf("fix: %s (#%d)", t, parent.Number)
}

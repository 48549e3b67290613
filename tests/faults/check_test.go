package faults

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// reviewMarker selects the review scenario: every review prompt says it,
// and it must come before the dev scenario, whose marker the review
// prompt quotes from the issue.
const reviewMarker = "Review pull request #"

// approve is the review session of a world: it approves.
func approve() claudetest.Scenario {
	return claudetest.Scenario{Name: "review", Marker: reviewMarker, Turns: []claudetest.Turn{
		claudetest.Tools(claudetest.Bash(`printf '%s' '{"verdict":"APPROVE","verdict_reason":"does what the issue asks","review_markdown":"Looks right."}' > "$DISINTO_REVIEW_FILE" && echo review-written`)),
		claudetest.Text("Review written."),
	}}
}

// commitLine is the turn that implements an issue: it appends line to
// file, commits, and reports the work ready for review.
func commitLine(file, line string) claudetest.Turn {
	return claudetest.Tools(claudetest.Bash(fmt.Sprintf(
		`printf '%%s\n' %q >> %s && git add %s && git commit -q -m "add %s (#$DISINTO_ISSUE)" && printf 'PHASE:awaiting_ci\n' > "$DISINTO_PHASE_FILE" && echo committed`,
		line, file, file, file)))
}

// implement is a dev scenario whose session commits line to file.
func implement(name, file, line string) claudetest.Scenario {
	return claudetest.Scenario{Name: name, Turns: []claudetest.Turn{commitLine(file, line), claudetest.Text("Done.")}}
}

// backlog files an issue as the owner and puts it on the backlog.
func (w *world) backlog(title, scenario string) int64 {
	w.t.Helper()
	i, err := w.Repo.CreateIssue(testCtx(w.t), forge.NewIssue{Title: title, Body: "scenario: " + scenario + "\n\n" + title + "."})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.Repo.AddLabels(testCtx(w.t), i.Number, forge.LabelBacklog); err != nil {
		w.t.Fatal(err)
	}
	return i.Number
}

// outcome is how an issue must end.
type outcome struct {
	// merged: a pull request with line in file is merged; otherwise the
	// issue is blocked with code.
	merged     bool
	file, line string
	code       ledger.Code
	// orBlocked, with merged, also accepts the issue blocked with one of
	// these codes.
	orBlocked []ledger.Code
}

// fixes reports whether pull request p says it fixes issue n.
func fixes(p forge.PullRequest, n int64) bool {
	return strings.HasPrefix(p.Body, fmt.Sprintf("Fixes #%d\n", n)) || p.Body == fmt.Sprintf("Fixes #%d", n)
}

// settled reports whether issue n ended as want says, with no claim left.
func (w *world) settled(n int64, want outcome) bool {
	w.t.Helper()
	ctx := testCtx(w.t)
	i, err := w.Repo.GetIssue(ctx, n)
	if err != nil {
		w.t.Fatal(err)
	}
	if i.HasLabel(forge.LabelInProgress) {
		return false
	}
	// A blocked issue stays assigned: a human sends it back.
	if !want.merged {
		return i.HasLabel(forge.LabelBlocked) && w.ledgerHas(n, ledger.ReasonBlocked, want.code)
	}
	for _, c := range want.orBlocked {
		if i.HasLabel(forge.LabelBlocked) && w.ledgerHas(n, ledger.ReasonBlocked, c) {
			return true
		}
	}
	if i.State != forge.StateClosed || len(i.Assignees) > 0 {
		return false
	}
	ps, err := w.Repo.ListPulls(ctx, forge.StateAll)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, p := range ps {
		if fixes(p, n) && p.Merged {
			return w.ledgerHas(n, ledger.ReasonMerged, "")
		}
	}
	return false
}

// ledgerHas reports whether the ledger has a dev record of issue n with
// reason (and code, unless empty).
func (w *world) ledgerHas(n int64, reason ledger.Reason, code ledger.Code) bool {
	for _, r := range w.ledger() {
		if r.Role == "dev" && r.Issue == n && r.Reason == reason && (code == "" || r.Code == code) {
			return true
		}
	}
	return false
}

func (w *world) ledger() []ledger.Record {
	w.t.Helper()
	recs, _, err := ledger.Read(filepath.Join(w.Data, "ledger"), ledger.Filter{})
	if err != nil {
		w.t.Fatal(err)
	}
	return recs
}

// converge waits for issue n to end as want says, then verifies it and
// records the try as fault in the summary.
func (w *world) converge(fault string, n int64, want outcome, timeout time.Duration) {
	w.t.Helper()
	w.await(fault, n, want, timeout, func() {
		if why := w.died(); why != "" {
			w.t.Fatalf("%s: waiting for issue #%d to settle: %s", fault, n, why)
		}
	})
	dups, stuck, leaks := w.verify(fault, n, want)
	tally.note(fault, true, dups, stuck, leaks)
}

// await waits for issue n to settle as want says, calling each between
// looks; past timeout it records fault as not converged and fails.
func (w *world) await(fault string, n int64, want outcome, timeout time.Duration, each func()) {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for !w.settled(n, want) {
		each()
		if time.Now().After(deadline) {
			tally.note(fault, false, 0, 0, 0)
			w.t.Fatalf("%s: issue #%d did not settle within %s (want %+v); last ledger records:\n%s\nlast daemon lines:\n%s",
				fault, n, timeout, want, w.lastRecords(8), w.lastLines(40))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// verify checks what every fault must leave behind once issue n settled:
// one pull request, no duplicate comment, no stuck claim on any issue, the
// commit on main, no session process or CLI left. It returns the
// duplicates, stuck claims and leftover processes it found.
func (w *world) verify(fault string, n int64, want outcome) (dups, stuck, leaks int) {
	w.t.Helper()
	ctx := testCtx(w.t)
	ps, err := w.Repo.ListPulls(ctx, forge.StateAll)
	if err != nil {
		w.t.Fatal(err)
	}
	var mine []forge.PullRequest
	for _, p := range ps {
		if fixes(p, n) {
			mine = append(mine, p)
		}
	}
	if want.merged && len(mine) != 1 || len(mine) > 1 {
		dups += max(len(mine)-1, 0)
		w.t.Errorf("%s: %d pull requests for issue #%d: %+v", fault, len(mine), n, mine)
	}
	threads := []int64{n}
	for _, p := range mine {
		threads = append(threads, p.Number)
	}
	for _, th := range threads {
		d := w.duplicateComments(th)
		dups += len(d)
		for _, c := range d {
			w.t.Errorf("%s: duplicate comment on #%d: %s", fault, th, c)
		}
	}
	stuck = w.stuckClaims()
	if want.merged && len(mine) == 1 && mine[0].Merged {
		f, err := w.Repo.GetFile(ctx, want.file, "main")
		if err != nil || !strings.Contains(string(f.Content), want.line) {
			w.t.Errorf("%s: main lacks the session's commit (%q in %s): %v", fault, want.line, want.file, err)
		}
	}
	// The sessions of a settled issue are over, or end within moments.
	end := time.Now().Add(30 * time.Second)
	for left := procsUnder(w.Dir, w.Data); len(left) > 0; left = procsUnder(w.Dir, w.Data) {
		if time.Now().After(end) {
			leaks = len(left)
			w.t.Errorf("%s: processes left after issue #%d settled:\n%s", fault, n, strings.Join(left, "\n"))
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return dups, stuck, leaks
}

// lastRecords formats the last n ledger records, one a line.
func (w *world) lastRecords(n int) string {
	recs := w.ledger()
	var b strings.Builder
	for _, r := range recs[max(len(recs)-n, 0):] {
		fmt.Fprintf(&b, "  %s %s #%d/%d %s %s: %s\n", r.Start.Format("15:04:05"), r.Role, r.Issue, r.PR, r.Reason, r.Code, firstLine(r.Detail))
	}
	return b.String()
}

// lastLines returns the daemon's last n console lines, debug lines aside.
func (w *world) lastLines(n int) string {
	var out []string
	for _, l := range strings.Split(w.output(), "\n") {
		if !strings.Contains(l, " DBG ") {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(len(out)-n, 0):], "\n")
}

// duplicateComments lists the comments of thread n that repeat an earlier
// comment of the same author word for word.
func (w *world) duplicateComments(n int64) []string {
	w.t.Helper()
	cs, err := w.Repo.ListComments(testCtx(w.t), n)
	if err != nil {
		w.t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range cs {
		k := c.Author + "\x00" + c.Body
		if seen[k] {
			out = append(out, c.Author+": "+firstLine(c.Body))
		}
		seen[k] = true
	}
	return out
}

// stuckClaims counts the issues left in progress, failing the test for each.
func (w *world) stuckClaims() int {
	w.t.Helper()
	is, err := w.Repo.ListIssues(testCtx(w.t), forge.IssueQuery{State: forge.StateAll})
	if err != nil {
		w.t.Fatal(err)
	}
	n := 0
	for _, i := range is {
		if i.HasLabel(forge.LabelInProgress) {
			n++
			w.t.Errorf("issue #%d is stuck in progress", i.Number)
		}
	}
	return n
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// logLines returns the daemon's console lines at level (ERR, WRN, INF)
// whose text contains msg.
func (w *world) logLines(level, msg string) []string {
	var out []string
	for _, l := range strings.Split(w.output(), "\n") {
		if strings.Contains(l, " "+level+" ") && strings.Contains(l, msg) {
			out = append(out, l)
		}
	}
	return out
}

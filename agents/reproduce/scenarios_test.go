package reproduce

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/runner"
)

// scriptedRunner stands in for the sidecar: it answers every job with the
// session's result event for answer and the screenshots, as the real
// sidecar's output carries them, and remembers the jobs.
type scriptedRunner struct {
	mu     sync.Mutex
	answer string
	shots  map[string][]byte
	err    error
	jobs   []runner.Job
	// subtype is the result event's ("success" when empty).
	subtype string
}

func (s *scriptedRunner) Run(_ context.Context, j runner.Job) (runner.Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs = append(s.jobs, j)
	if s.err != nil {
		return runner.Outcome{ExitCode: -1}, s.err
	}
	sub := s.subtype
	if sub == "" {
		sub = "success"
	}
	ev, _ := json.Marshal(map[string]any{"type": "result", "subtype": sub, "is_error": sub != "success", "result": s.answer,
		"session_id": fmt.Sprintf("sess-%d", len(s.jobs)), "num_turns": 3})
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for name, data := range s.shots {
		_ = tw.WriteHeader(&tar.Header{Name: "./" + name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		_, _ = tw.Write(data)
	}
	_ = tw.Close()
	log := `{"type":"system"}` + "\n" + string(ev) + "\n" + artifactsBegin + "\n" +
		base64.StdEncoding.EncodeToString(tb.Bytes()) + "\n" + artifactsEnd + "\n"
	return runner.Outcome{ExitCode: 0, Log: log, Started: time.Now(), Ended: time.Now()}, nil
}

// answer is a final answer with the outcome object in a json fence.
func answer(obj string) string { return "Done.\n\n```json\n" + obj + "\n```\n" }

// tinyPNG is the start of a PNG file (the forge checks the type by
// content).
var tinyPNG = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde"),
	[]byte("\x00\x00\x00\x0cIDATx\x9cc\xf8\x0f\x00\x01\x01\x01\x00\x18\xdd\x8d\xb0\x00\x00\x00\x00IEND\xaeB`\x82")...)

// 5.8 §1: cannot-reproduce keeps bug-report, adds rejected, and says so.
func TestCannotReproduceIsRejected(t *testing.T) {
	g := newRig(t)
	i := g.issue("Login button dead", "Click login.", forge.LabelBugReport)
	a := g.agent(&scriptedRunner{answer: answer(`{"outcome": "cannot-reproduce", "findings": "The button works."}`)}, nil)
	res := a.Work(g.ctx(), Candidate{Issue: i, Mode: ModeReproduce})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	g.wantLabels(i.Number, forge.LabelBugReport, forge.LabelRejected)
	cs := g.comments(i.Number)
	if len(cs) != 1 || !strings.HasPrefix(cs[0], "**Could not be reproduced.**") {
		t.Errorf("comments %q", cs)
	}
}

// 5.8 §2: an answer without an outcome is needs-triage: blocked.
func TestNoOutcomeIsBlocked(t *testing.T) {
	g := newRig(t)
	i := g.issue("Page blank", "Open /.", forge.LabelBugReport)
	a := g.agent(&scriptedRunner{answer: "I looked around; it might be broken."}, nil)
	res := a.Work(g.ctx(), Candidate{Issue: i, Mode: ModeReproduce})
	if res.Err != nil || res.Outcome.Outcome != NeedsTriage {
		t.Fatalf("outcome %q, %v", res.Outcome.Outcome, res.Err)
	}
	g.wantLabels(i.Number, forge.LabelBugReport, forge.LabelBlocked)
}

// 5.8 §3: reproduced with a root cause: reproduced and in-progress, one
// fix issue with a single fix: prefix and the backlog label, and the
// screenshot attached.
func TestReproducedWithCauseFilesAFix(t *testing.T) {
	g := newRig(t)
	i := g.issue("fix: parser crashes on empty input", "Submit an empty form.", forge.LabelBugReport)
	a := g.agent(&scriptedRunner{
		answer: answer(`{"outcome": "reproduced", "root_cause": "nil pointer in parser", "findings": "It crashes.", "screenshots": ["issue-step-1.png"]}`),
		shots:  map[string][]byte{"issue-step-1.png": tinyPNG, "notes.txt": []byte("not an image")},
	}, nil)
	res := a.Work(g.ctx(), Candidate{Issue: i, Mode: ModeReproduce})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	g.wantLabels(i.Number, forge.LabelBugReport, forge.LabelReproduced, forge.LabelInProgress)
	fixes := g.fixesOf(i.Number)
	if len(fixes) != 1 {
		t.Fatalf("fix issues %+v, want one", fixes)
	}
	f := fixes[0]
	if f.Title != "fix: parser crashes on empty input (#"+itoa(i.Number)+")" || !f.HasLabel(forge.LabelBacklog) ||
		!strings.Contains(f.Body, "nil pointer in parser") || !strings.Contains(f.Body, "Decomposed from #"+itoa(i.Number)) {
		t.Errorf("fix issue %q labels %v body:\n%s", f.Title, f.Labels, f.Body)
	}
	atts, err := g.repo.ListIssueAttachments(g.ctx(), i.Number)
	if err != nil || len(atts) != 1 || atts[0].Name != "issue-step-1.png" {
		t.Errorf("attachments %+v, %v: want only the screenshot", atts, err)
	}
}

// 5.8 §4: with the stack lock held elsewhere, nothing runs and nothing
// changes; the attempt is counted and backed off, and after MaxAttempts
// the issue is blocked with a comment.
func TestLockHeldBacksOffThenBlocks(t *testing.T) {
	g := newRig(t)
	i := g.issue("Slow page", "Open /slow.", forge.LabelBugReport)
	sr := &scriptedRunner{answer: answer(`{"outcome": "cannot-reproduce", "findings": "x"}`)}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := g.agent(sr, func() time.Time { return now })
	release, err := stackLock(a.o.LockDir, a.o.Project)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	c := Candidate{Issue: i, Mode: ModeReproduce}
	res := a.Work(g.ctx(), c)
	if !errors.Is(res.Err, ErrLockHeld) || res.Attempts != 1 || len(sr.jobs) != 0 {
		t.Fatalf("err %v attempts %d jobs %d: want the lock refusal, one attempt, no run", res.Err, res.Attempts, len(sr.jobs))
	}
	g.wantLabels(i.Number, forge.LabelBugReport)
	if rec := res.record(c); rec.Code != codeLockHeld {
		t.Errorf("ledger code %q", rec.Code)
	}
	if a.attempts.due(i.Number, now.Add(time.Minute)) || !a.attempts.due(i.Number, now.Add(DefaultBackoff)) {
		t.Errorf("backoff: due too early or never")
	}
	for k := 2; k <= MaxAttempts; k++ {
		res = a.Work(g.ctx(), c)
	}
	if res.Attempts != MaxAttempts {
		t.Fatalf("attempts %d", res.Attempts)
	}
	g.wantLabels(i.Number, forge.LabelBugReport, forge.LabelBlocked)
	if cs := g.comments(i.Number); len(cs) != 1 || !strings.Contains(cs[0], "failed 3 times") {
		t.Errorf("comments %q", cs)
	}
}

// 5.8 §5 and 4.4 §4: verify is chosen from forge state (every fix issue
// closed) before any session; verified-fixed removes in-progress and
// closes the report with a verification comment.
func TestVerifyClosesAFixedBug(t *testing.T) {
	g := newRig(t)
	i := g.issue("Cart total NaN", "Open /cart?qty=abc.", forge.LabelBugReport)
	sr := &scriptedRunner{answer: answer(`{"outcome": "reproduced", "root_cause": "parseInt of text", "findings": "NaN shown."}`)}
	a := g.agent(sr, nil)
	if res := a.Work(g.ctx(), Candidate{Issue: i, Mode: ModeReproduce}); res.Err != nil {
		t.Fatal(res.Err)
	}
	fixes := g.fixesOf(i.Number)
	if len(fixes) != 1 {
		t.Fatalf("fixes %+v", fixes)
	}
	// A fix issue still open: no verify run is due.
	if cands, err := a.Candidates(g.ctx()); err != nil || len(cands) != 0 {
		t.Fatalf("candidates with an open fix: %+v, %v", cands, err)
	}
	// A look-alike by someone else, closed, changes nothing.
	fake := g.issue("fix: unrelated", fixMarker(fixRef{Parent: i.Number, Run: "x", Cause: 1}), forge.LabelBacklog)
	if err := g.repo.CloseIssue(g.ctx(), fake.Number); err != nil {
		t.Fatal(err)
	}
	// The dev agent claims the fix (backlog off, in-progress on), then
	// merges it and the issue closes.
	if err := g.repo.RemoveLabels(g.ctx(), fixes[0].Number, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	if err := g.repo.AddLabels(g.ctx(), fixes[0].Number, forge.LabelInProgress); err != nil {
		t.Fatal(err)
	}
	if err := g.repo.CloseIssue(g.ctx(), fixes[0].Number); err != nil {
		t.Fatal(err)
	}
	cands, err := a.Candidates(g.ctx())
	if err != nil || len(cands) != 1 || cands[0].Mode != ModeVerify || len(cands[0].Fixes) != 1 {
		t.Fatalf("candidates %+v, %v: want one verify run with one fix", cands, err)
	}
	sr.answer = answer(`{"outcome": "verified-fixed", "findings": "The total is 9 EUR now."}`)
	res := a.Work(g.ctx(), cands[0])
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if len(sr.jobs) != 2 || !strings.Contains(decodedPrompt(t, sr.jobs[1].Script), `mode "verify"`) {
		t.Errorf("%d sessions, want one per run (no second session in verify)", len(sr.jobs))
	}
	got, state := g.labels(i.Number)
	if state != forge.StateClosed || got[forge.LabelInProgress] || !got[forge.LabelBugReport] {
		t.Errorf("after verify: %s, labels %v", state, got)
	}
	cs := g.comments(i.Number)
	if last := cs[len(cs)-1]; !strings.Contains(last, "Verified fixed") || !strings.Contains(last, "#"+itoa(fixes[0].Number)) {
		t.Errorf("verification comment %q", last)
	}
}

// 5.8 §6: a conclusive triage ends on bug-report + in-progress (and
// reproduced), never back in in-triage, with one fix issue per cause.
func TestConclusiveTriageMovesToInProgress(t *testing.T) {
	g := newRig(t)
	i := g.issue("Checkout fails", "Pay with a voucher.", forge.LabelBugReport, forge.LabelInTriage)
	a := g.agent(&scriptedRunner{answer: answer(`{"outcome": "reproduced", "root_cause": "two", "findings": "Traced.",
		"causes": [{"title": "fix: fix: voucher rounding", "body": "Rounds twice."}, {"title": "voucher expiry in UTC", "body": "Local time used.", "affected_files": ["pay/voucher.go"]}]}`)}, nil)
	cands, err := a.Candidates(g.ctx())
	if err != nil || len(cands) != 1 || cands[0].Mode != ModeTriage {
		t.Fatalf("candidates %+v, %v: want a triage run", cands, err)
	}
	if res := a.Work(g.ctx(), cands[0]); res.Err != nil {
		t.Fatal(res.Err)
	}
	g.wantLabels(i.Number, forge.LabelBugReport, forge.LabelReproduced, forge.LabelInProgress)
	fixes := g.fixesOf(i.Number)
	if len(fixes) != 2 {
		t.Fatalf("fixes %+v, want two", fixes)
	}
	for _, f := range fixes {
		if strings.HasPrefix(f.Title, "fix: fix:") || !strings.HasPrefix(f.Title, "fix: voucher") {
			t.Errorf("fix title %q", f.Title)
		}
	}
}

func itoa(n int64) string { return fmtInt(n) }

// decodedPrompt is the prompt a sidecar script carries (base64).
func decodedPrompt(t *testing.T, script string) string {
	t.Helper()
	for _, line := range strings.Split(script, "\n") {
		if strings.HasSuffix(line, promptFile) {
			enc := strings.TrimPrefix(strings.Fields(line)[2], "'")
			b, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(enc, "'"))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	t.Fatal("the script writes no prompt")
	return ""
}

// flakyForge fails the first AddLabels calls.
type flakyForge struct {
	Forge
	failAdd int
}

func (f *flakyForge) AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error {
	if f.failAdd > 0 {
		f.failAdd--
		return errors.New("forge unavailable (injected)")
	}
	return f.Forge.AddLabels(ctx, n, names...)
}

// An answer whose application fails half-way is applied again on the
// next attempt without a second session, and nothing is posted twice:
// one screenshot, one fix issue, one comment.
func TestFailedApplyIsRetriedWithoutDuplicates(t *testing.T) {
	g := newRig(t)
	i := g.issue("Search returns nothing", "Search for shoes.", forge.LabelBugReport)
	sr := &scriptedRunner{
		answer: answer(`{"outcome": "reproduced", "root_cause": "the query is lower-cased twice", "findings": "Empty results.", "screenshots": ["issue-step-1.png"]}`),
		shots:  map[string][]byte{"issue-step-1.png": tinyPNG},
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := g.agent(sr, func() time.Time { return now })
	flaky := &flakyForge{Forge: a.o.Forge, failAdd: 1}
	a.o.Forge = flaky
	c := Candidate{Issue: i, Mode: ModeReproduce}
	res := a.Work(g.ctx(), c)
	if res.Applied != nil || res.Err == nil || res.Attempts != 1 {
		t.Fatalf("first run: applied %v err %v attempts %d: want a failed apply", res.Applied, res.Err, res.Attempts)
	}
	g.wantLabels(i.Number, forge.LabelBugReport)
	now = now.Add(DefaultBackoff)
	res = a.Work(g.ctx(), c)
	if res.Err != nil || res.Applied == nil {
		t.Fatalf("second run: %v", res.Err)
	}
	if len(sr.jobs) != 1 {
		t.Errorf("%d sessions, want one: the answer is applied again, not asked again", len(sr.jobs))
	}
	g.wantLabels(i.Number, forge.LabelBugReport, forge.LabelReproduced, forge.LabelInProgress)
	if fixes := g.fixesOf(i.Number); len(fixes) != 1 {
		t.Errorf("%d fix issues, want one", len(fixes))
	}
	if cs := g.comments(i.Number); len(cs) != 1 || !strings.Contains(cs[0], "issue-step-1.png") {
		t.Errorf("comments %q, want one with the screenshot", cs)
	}
	if atts, err := g.repo.ListIssueAttachments(g.ctx(), i.Number); err != nil || len(atts) != 1 {
		t.Errorf("attachments %+v, %v: want one", atts, err)
	}
	if a.attempts.get(i.Number).Count != 0 {
		t.Errorf("the attempts are not cleared after the run applied")
	}
}

// A session that ends on an error of its own (the turn limit, the API)
// is a failed attempt, not the bug's verdict: no label moves; a stopping
// daemon's run is not even counted.
func TestSessionErrorIsAnAttempt(t *testing.T) {
	g := newRig(t)
	i := g.issue("Menu flickers", "Hover the menu.", forge.LabelBugReport)
	sr := &scriptedRunner{answer: "", subtype: "error_max_turns"}
	a := g.agent(sr, nil)
	c := Candidate{Issue: i, Mode: ModeReproduce}
	res := a.Work(g.ctx(), c)
	if res.Applied != nil || res.Attempts != 1 || res.record(c).Code != codeRunFailed {
		t.Fatalf("applied %v attempts %d code %s: want a counted failure", res.Applied, res.Attempts, res.record(c).Code)
	}
	g.wantLabels(i.Number, forge.LabelBugReport)
	if cs := g.comments(i.Number); len(cs) != 0 {
		t.Errorf("comments %q", cs)
	}
	ctx, cancel := context.WithCancel(g.ctx())
	cancel()
	sr.err = context.Canceled
	res = a.Work(ctx, c)
	if !res.Interrupted || res.record(c).Reason != "interrupted" || a.attempts.get(i.Number).Count != 1 {
		t.Errorf("cancelled run: interrupted %v, %d attempts", res.Interrupted, a.attempts.get(i.Number).Count)
	}
}

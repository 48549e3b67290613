package dev

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/disinto/disinto/lib/cilog"
	"github.com/disinto/disinto/lib/forge"
)

// fakeLogs is a CI log source that returns one scripted log and error,
// and remembers the heads it was asked about.
type fakeLogs struct {
	mu    sync.Mutex
	log   cilog.Log
	err   error
	heads []string
}

func (f *fakeLogs) Fetch(_ context.Context, cs forge.CombinedStatus) (cilog.Log, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heads = append(f.heads, cs.SHA)
	return f.log, f.err
}

func TestCIFixGetsTheLog(t *testing.T) {
	logs := &fakeLogs{log: cilog.Log{Source: cilog.SourceWoodpecker, Job: "pipeline 7",
		Text: "./widget.go:12:2: undefined: frobnicate\nwith s3cr3t-value printed", Steps: []cilog.Step{{Name: "build", ExitCode: 2}}}}
	h := newHarness(t, pushing, func(o *Options) { o.CILogs = logs })
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	head := h.f.pull(st.PR).HeadSHA
	h.f.setStatus(head, forge.CIFailure, "unit tests failed")
	h.tick()
	calls := h.r.Calls()
	if len(calls) != 2 {
		t.Fatalf("%d sessions, want the fix session", len(calls))
	}
	p := calls[1].Prompt
	for _, want := range []string{"unit tests failed", "Log of pipeline 7 (woodpecker; step build exited 2):", "./widget.go:12:2: undefined: frobnicate"} {
		if !strings.Contains(p, want) {
			t.Errorf("fix prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "s3cr3t-value") {
		t.Error("a secret in the CI log reached the prompt")
	}
	if len(logs.heads) != 1 || logs.heads[0] != head {
		t.Errorf("log asked for %v, want the head %s", logs.heads, head)
	}
}

func TestCILogSourceFailureKeepsTheStatuses(t *testing.T) {
	logs := &fakeLogs{err: errors.New("woodpecker GET http://wp/api/repos/3/pipelines: HTTP 502")}
	h := newHarness(t, pushing, func(o *Options) { o.CILogs = logs })
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	h.f.setStatus(h.f.pull(st.PR).HeadSHA, forge.CIFailure, "unit tests failed: TestWidget")
	h.tick()
	calls := h.r.Calls()
	if len(calls) != 2 || !strings.Contains(calls[1].Prompt, "unit tests failed: TestWidget") || strings.Contains(calls[1].Prompt, "Log of") {
		t.Fatalf("sessions %d; fix prompt %q", len(calls), calls[len(calls)-1].Prompt)
	}
}

func TestInfraFailureFromTheLog(t *testing.T) {
	logs := &fakeLogs{log: cilog.Log{Source: cilog.SourceActions, Job: "job ci / test",
		Text: "go test ./...\nwrite /tmp/go-build1/b001/x.test: no space left on device"}}
	h := newHarness(t, pushing, func(o *Options) { o.CILogs = logs })
	n := h.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st := driveToPR(t, h, n)
	head := h.f.pull(st.PR).HeadSHA
	h.f.setStatus(head, forge.CIFailure, "Failing after 3s")
	h.tick()
	if h.f.pull(st.PR).HeadSHA == head {
		t.Fatal("an infrastructure failure in the log did not re-run CI")
	}
	if len(h.r.Calls()) != 1 {
		t.Fatal("an infrastructure failure resumed the model")
	}
	// A compiler error is the code's, whatever the status says.
	logs.mu.Lock()
	logs.log.Text = "./widget.go:3:1: syntax error: unexpected }"
	logs.mu.Unlock()
	h2 := newHarness(t, pushing, func(o *Options) { o.CILogs = logs })
	n2 := h2.f.addIssue("Fix it", "body", forge.LabelBacklog)
	st2 := driveToPR(t, h2, n2)
	h2.f.setStatus(h2.f.pull(st2.PR).HeadSHA, forge.CIFailure, "Failing after 3s")
	h2.tick()
	if len(h2.r.Calls()) != 2 {
		t.Fatal("a compiler error was not handed to the model")
	}
}

package daemon

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/ledger"
)

// TestStatusShowsStageTimes: a recent run's line says where its time went.
func TestStatusShowsStageTimes(t *testing.T) {
	rec := ledger.Record{End: time.Now(), Project: "alpha", Role: "dev", Issue: 7, Reason: ledger.ReasonMerged, Wall: 18 * time.Minute,
		Stages: []ledger.StageTime{{Name: "claim_to_session", Wall: time.Second}, {Name: "session_to_pr", Wall: 2 * time.Minute},
			{Name: "pr_to_ci", Wall: 6 * time.Minute}, {Name: "ci_to_approval", Wall: 10 * time.Minute}, {Name: "approval_to_merge", Wall: 0}}}
	var out bytes.Buffer
	Report{Recent: []ledger.Record{rec}}.WriteText(&out, false)
	want := "session 1s, pr 2m0s, ci 6m0s, approval 10m0s, merge 0s"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("status lacks %q:\n%s", want, out.String())
	}
	if got := stageTimes(nil); got != "-" {
		t.Errorf("no stages shown as %q", got)
	}
}

type fixedReport agent.Report

func (f fixedReport) Report() agent.Report { return agent.Report(f) }

// TestStatusShowsWorkInFlight: status lists each issue an agent holds with
// its stage, pull request, attempts and age, and the pushes still queued.
func TestStatusShowsWorkInFlight(t *testing.T) {
	now := time.Now()
	d := &Daemon{reporters: []agent.Reporter{
		fixedReport{Items: []agent.Item{{Project: "beta", Role: "dev", Issue: 9, Stage: "implementing", Started: now.Add(-time.Minute)}}},
		fixedReport{
			Items: []agent.Item{{Project: "alpha", Role: "dev", Issue: 7, PR: 8, Stage: "awaiting_ci", Started: now.Add(-2 * time.Hour),
				Waiting: now.Add(-90 * time.Second), Attempts: map[string]int{"review": 2, "ci": 1}, Limits: map[string]int{"ci": 3, "review": 5}}},
			Pending: []agent.Pending{{Project: "alpha", Role: "dev", What: "mirror push", Target: "github", Detail: "abc123",
				Queued: now, Attempts: 2, Next: now.Add(time.Minute), Error: "connection refused"}},
		},
	}}
	var rep Report
	rep.InFlight, rep.Pending = d.holdings()
	if len(rep.InFlight) != 2 || rep.InFlight[0].Project != "alpha" {
		t.Fatalf("in flight %+v, want alpha's issue first", rep.InFlight)
	}
	var out bytes.Buffer
	printHoldings(&out, rep, now)
	for _, want := range []string{"#7", "#8", "awaiting_ci", "ci 1/3, review 2/5", "2h0m0s", "1m30s", "#9", "implementing",
		"mirror push to github of abc123", "failed 2 times", "connection refused"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}

// TestStatusShowsWhatWaitsForAHuman: work that waits for a maintainer is
// listed apart, with what they must do.
func TestStatusShowsWhatWaitsForAHuman(t *testing.T) {
	now := time.Now()
	rep := Report{InFlight: []agent.Item{
		{Project: "alpha", Role: "dev", Issue: 3, Stage: "awaiting_ci", Started: now},
		{Project: "alpha", Role: "dev", Issue: 4, Stage: "held", Started: now, Human: "a maintainer's /approve of abc123 (protected: .forgejo/workflows/ci.yml)"},
		{Project: "beta", Role: "dev", Issue: 5, PR: 6, Stage: "awaiting_approval", Started: now, Human: "a maintainer to merge or close pull request #6 (level advisory)"},
	}}
	var out bytes.Buffer
	printHoldings(&out, rep, now)
	want := "\nwaiting for a human:\n  alpha #4: a maintainer's /approve of abc123 (protected: .forgejo/workflows/ci.yml)\n" +
		"  beta #5: a maintainer to merge or close pull request #6 (level advisory)\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("status lacks %q:\n%s", want, out.String())
	}
	if strings.Count(out.String(), "waiting for a human") != 1 || strings.Contains(out.String(), "alpha #3:") {
		t.Errorf("status:\n%s", out.String())
	}
}

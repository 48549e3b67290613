package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/ledger"
)

// TestStatusShowsStageTimes: a recent run's line says where its time went.
func TestStatusShowsStageTimes(t *testing.T) {
	rec := ledger.Record{End: time.Now(), Project: "alpha", Role: "dev", Issue: 7, Reason: ledger.ReasonMerged, Wall: 18 * time.Minute,
		Stages: []ledger.StageTime{{Name: "claim_to_session", Wall: time.Second}, {Name: "session_to_pr", Wall: 2 * time.Minute},
			{Name: "pr_to_ci", Wall: 6 * time.Minute}, {Name: "ci_to_approval", Wall: 10 * time.Minute}, {Name: "approval_to_merge", Wall: 0}}}
	var out bytes.Buffer
	printStatus(&out, statusReport{Recent: []ledger.Record{rec}}, false)
	want := "session 1s, pr 2m0s, ci 6m0s, approval 10m0s, merge 0s"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("status lacks %q:\n%s", want, out.String())
	}
	if got := stageTimes(nil); got != "-" {
		t.Errorf("no stages shown as %q", got)
	}
}

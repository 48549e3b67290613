package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/ledger"
)

// status --json gives lists as [] and durations in seconds, and the table
// of recent runs has a header.
func TestStatusJSONListsAndSeconds(t *testing.T) {
	rec := ledger.Record{End: time.Now(), Project: "alpha", Role: "dev", Issue: 7, Reason: ledger.ReasonMerged,
		Wall: 90 * time.Second, Stages: []ledger.StageTime{{Name: "pr_to_ci", Wall: 1500 * time.Millisecond}}}
	rep := daemon.Report{Recent: []ledger.Record{rec}}
	var out bytes.Buffer
	if err := writeStatusJSON(&out, rep); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, out.String())
	}
	for _, k := range []string{"jobs", "running", "paused", "disabled", "failing", "in_flight"} {
		if l, ok := got[k].([]any); !ok || len(l) != 0 {
			t.Errorf("%s = %#v, want []", k, got[k])
		}
	}
	if strings.Contains(out.String(), "null") || strings.Contains(out.String(), "_ns") {
		t.Errorf("status JSON holds a null or a nanosecond field:\n%s", out.String())
	}
	r := got["recent"].([]any)[0].(map[string]any)
	if r["wall_seconds"] != 90.0 {
		t.Errorf("wall_seconds = %v, want 90", r["wall_seconds"])
	}
	if s := r["stages"].([]any)[0].(map[string]any); s["wall_seconds"] != 1.5 {
		t.Errorf("stage wall_seconds = %v, want 1.5", s["wall_seconds"])
	}
	var table bytes.Buffer
	rep.WriteText(&table, false)
	if !strings.Contains(table.String(), "ENDED") || !strings.Contains(table.String(), "OUTCOME") {
		t.Errorf("recent runs without a header:\n%s", table.String())
	}
}

package daemon

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/trackrecord"
)

// trackRecordFixture is one project's record: dev at two levels, one
// revert and one reopened issue.
func trackRecordFixture(now time.Time) trackrecord.Record {
	return trackrecord.Record{Project: "alpha", At: now, WindowDays: 30, RevertDays: 7,
		Rows: []trackrecord.Row{
			{Role: "dev", Level: "approve", Merged: 4},
			{Role: "dev", Level: "auto", Merged: 9, Reverted: 1, Reopened: 1, ClosedUnmerged: 2},
			{Role: "gardener", Merged: 3},
		},
		Reverted: []int64{41}, Reopened: []int64{44}}
}

// TestTrackRecordsShown: the record a keeper wrote is read back for the
// configured projects, and status and the status page show each row and
// name the reverted and reopened pull requests.
func TestTrackRecordsShown(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	if err := atomicfile.WriteState(datadir.New(dir).TrackRecord("alpha"), trackRecordFixture(now)); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Projects: []*config.Project{{Name: "alpha"}, {Name: "beta"}}}
	recs := TrackRecords(dir, cfg)
	if len(recs) != 1 || recs[0].Project != "alpha" || len(recs[0].Rows) != 3 {
		t.Fatalf("records read back: %+v", recs)
	}
	if filepath.Dir(datadir.New(dir).TrackRecord("alpha")) != datadir.New(dir).State("alpha") {
		t.Error("the record is not kept in the project's state")
	}

	var text bytes.Buffer
	writeTrackRecords(&text, recs)
	for _, want := range []string{"track record (30 days; reverted or reopened within 7 days of the merge):",
		"alpha    dev       auto     9       1         1         2", "alpha    gardener  -        3",
		"alpha reverted: PR #41", "alpha issue reopened: PR #44"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, text.String())
		}
	}

	page, err := renderStatusPage(Report{TrackRecords: recs}, redact.New().String, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Track record, last 30 days", "<td>alpha</td><td>dev</td><td>auto</td><td>9</td><td class=\"bad\">1</td>",
		"within 7 days of the merge", "PR #41 reverted.", "issue of PR #44 reopened."} {
		if !strings.Contains(string(page), want) {
			t.Errorf("status page lacks %q", want)
		}
	}
}

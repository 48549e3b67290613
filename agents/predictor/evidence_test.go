package predictor

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/disinto/disinto/lib/evidence"
)

// TestEvidenceFilesInPrompt: the evidence files the daemon writes into
// the ops repository are in the predictor's prompt, beside the spec's
// inventory of evidence areas; a file not written yet is said so.
func TestEvidenceFilesInPrompt(t *testing.T) {
	r := newRig(t, map[string]string{"VISION.md": "# Vision\n\nLaunch.\n"})
	launchTree(r)
	today := time.Now()
	for path, day := range map[string]string{
		evidence.CIPath:      "- commits checked: 4; green 1, red 3, pending 0 (25% green of those finished)",
		evidence.ReviewsPath: "- reviews: 2; approved 0, changes requested 2, comments 0",
	} {
		f := evidence.File{Path: path, Title: path, About: "test"}
		r.ops[path] = &fstest.MapFile{Data: []byte(f.Render([]evidence.Day{{Date: evidence.DateOf(today), Body: day}}, today, evidence.Bounds{}))}
	}
	r.script()
	r.mustTick()
	p := r.Prompt()
	for _, want := range []string{"evidence/red-team: 0 files", "### evidence/ci.md", "red 3, pending 0 (25% green",
		"### evidence/reviews.md", "changes requested 2", "### evidence/engagement.md\n\nNot written yet"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
}

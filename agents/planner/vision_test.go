package planner

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/vision"
)

// TestTemplateVisionPlansNothing: with the VISION.md disinto init seeds,
// the planner asks the model nothing and says why; once a prediction
// waits, it answers it, told that there is no vision to plan from.
func TestTemplateVisionPlansNothing(t *testing.T) {
	r := newRig(t, map[string]string{"VISION.md": vision.Template("proj")}, nil)
	r.mustTick()
	if n := r.Sessions(); n != 0 {
		t.Errorf("the model was asked %d times with the template vision, want never", n)
	}
	if rec := r.LastRecord(); !strings.Contains(rec, "still the template") {
		t.Errorf("record %q does not say the vision is the template", rec)
	}
	r.Issue("Nothing measures the launch", "Seen.\n\n---\n**Theory:** no metrics\n", forge.LabelPredictionUnreviewed)
	r.scriptRaw(`{}`)
	r.mustTick()
	if r.Sessions() == 0 {
		t.Fatal("the model was not asked with a prediction waiting")
	}
	if p := r.Prompt(); !strings.Contains(p, "there is no vision yet") || !strings.Contains(p, "Nothing measures the launch") {
		t.Error("the prompt does not say there is no vision, or lacks the prediction")
	}
}

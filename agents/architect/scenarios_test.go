package architect

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// writes counts the architect's writing requests to the forge.
func (r *rig) writes() int {
	n := 0
	for k, c := range r.proxy.Counts() {
		if !strings.HasPrefix(k, "GET ") {
			n += c
		}
	}
	return n
}

// TestNothingToDo (§3.12.1): no vision issue and no sprint pull request:
// no model call and no write.
func TestNothingToDo(t *testing.T) {
	r := newRig(t)
	r.mustTick()
	if r.sessions() != 0 || r.writes() != 0 {
		t.Fatalf("%d model requests, %d writes (%v)", r.sessions(), r.writes(), r.proxy.Counts())
	}
}

// TestFirstPitch (§3.12.2): a vision issue is pitched as a sprint pull
// request on the ops repository, with the file on the branch, the body
// mirroring it, the footer as its only comment, and nothing new on the
// vision issue; the next run, with nothing changed, asks the model
// nothing.
func TestFirstPitch(t *testing.T) {
	r := newRig(t)
	v := r.vision("Add billing", "Customers pay monthly.")
	r.script(pitchScenario(v.Number, "Add billing"))
	r.mustTick()
	pr := r.mustSprint(v.Number)
	if pr.Title != "architect: Add billing" || pr.Base != "main" || pr.State != forge.StateOpen || pr.Head != branchFor(v.Number, 1) {
		t.Fatalf("sprint pull request %+v", pr)
	}
	f, err := r.opsRepo.GetFile(ctxOf(t), "sprints/add-billing.md", pr.Head)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(f.Content), "# Sprint: Add billing\n") || !strings.Contains(string(f.Content), "<!-- filer:begin -->") {
		t.Errorf("sprint file:\n%s", f.Content)
	}
	if pr.Body != mirror(f.Content, sprintID{v.Number, "add-billing", pr.Head}) {
		t.Errorf("body does not mirror the file:\n%s", pr.Body)
	}
	cs := r.opsComments(pr.Number)
	if len(cs) != 1 || cs[0].Body != Footer || cs[0].Author != r.bot.Login {
		t.Errorf("comments %+v", cs)
	}
	got, err := r.repo.GetIssue(ctxOf(t), v.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Labels) != 1 || len(r.comments(v.Number)) != 0 {
		t.Errorf("vision issue labels %v, %d comments", got.Labels, len(r.comments(v.Number)))
	}
	if p := strings.Join(r.requests("pitch-" + itoa(v.Number))[0].Texts, "\n"); !strings.Contains(p, "Customers pay monthly.") ||
		!strings.Contains(p, "Sell the product.") || !strings.Contains(p, "cmd/app/main.go") {
		t.Errorf("pitch prompt lacks the vision, VISION.md or the file list")
	}
	models := r.sessions()
	r.mustTick() // sees its own writes
	r.proxy.Reset()
	r.mustTick()
	if r.sessions() != models || r.writes() != 0 {
		t.Errorf("unchanged runs: %d model requests, writes %v", r.sessions()-models, r.proxy.Counts())
	}
	if it := r.a.Report().Items; len(it) != 1 || it[0].PR != pr.Number || it[0].Issue != v.Number || it[0].Stage != "sprint "+string(StageAwaitingDecision) {
		t.Errorf("report %+v", it)
	}
	if off := LastReport(filepath.Join(r.data, "state", "proj", "architect"), "proj"); fmt.Sprint(off) != fmt.Sprint(r.a.Report()) {
		t.Errorf("offline report %+v, live %+v", off, r.a.Report())
	}
}

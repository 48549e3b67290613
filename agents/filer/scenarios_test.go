package filer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/disinto/disinto/agents/filer"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/deps"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
)

// Spec 50 §6.10 scenarios 1, 2, 3 and 5: the sub-issues are filed with
// their labels, markers and dependencies, the vision is in progress, the
// pull request says what was filed, and a second pass files nothing.
func TestFileSprint(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	v := r.vision("Add billing")
	pr := r.mergeSprint("Add billing", map[string]string{"sprints/add-billing.md": sprintFile("Add billing", v.Number, billingBlock(v.Number))})
	r.mustRun()

	got := r.filed()
	if len(got) != 2 {
		t.Fatalf("filed %d issues: %v", len(got), got)
	}
	schema, ok := got[fmt.Sprintf("vision(#%d): billing schema", v.Number)]
	if !ok {
		t.Fatalf("no schema issue among %v", got)
	}
	api, ok := got[`Use "strict" mode`]
	if !ok {
		t.Fatalf("the quoted title was not kept: %v", got)
	}
	for id, is := range map[string]forge.Issue{"schema": schema, "api": api} {
		marker := fmt.Sprintf("<!-- decomposed-from: #%d, sprint: add-billing, id: %s -->", v.Number, id)
		if !strings.HasSuffix(is.Body, marker) {
			t.Errorf("%s body does not end with %s:\n%s", id, marker, is.Body)
		}
		if !slices.Equal(is.Labels, []forge.LabelName{forge.LabelBacklog}) {
			t.Errorf("%s labels %v", id, is.Labels)
		}
	}
	if !strings.Contains(schema.Body, "The tables.\n\n## Acceptance criteria") {
		t.Errorf("the blank line of the body was lost:\n%s", schema.Body)
	}
	if want := fmt.Sprintf("## Depends on\n- #%d\n", schema.Number); !strings.Contains(api.Body, want) {
		t.Errorf("api body lacks %q:\n%s", want, api.Body)
	}
	// The dev agent's gate reads the bodies with lib/deps: api waits for
	// schema, schema for nothing, and neither for the vision.
	if d := deps.ParseFor(api.Number, api.Body); !slices.Equal(d, []int64{schema.Number}) {
		t.Errorf("api depends on %v, want [%d]", d, schema.Number)
	}
	if d := deps.ParseFor(schema.Number, schema.Body); len(d) != 0 {
		t.Errorf("schema depends on %v", d)
	}
	g := deps.FromBodies(map[int64]string{schema.Number: schema.Body, api.Number: api.Body})
	closed := map[int64]bool{}
	state := func(n int64) (bool, bool) { return closed[n], true }
	if g.Ready(api.Number, state) || !g.Ready(schema.Number, state) {
		t.Error("api is ready before schema is closed")
	}
	closed[schema.Number] = true
	if !g.Ready(api.Number, state) {
		t.Error("api is not ready once schema is closed")
	}
	if !r.get(v.Number).HasLabel(forge.LabelInProgress) {
		t.Error("the vision is not in progress")
	}
	cs := r.opsComments(pr.Number)
	if len(cs) != 1 || cs[0].Author != r.bot.Login {
		t.Fatalf("comments on the sprint pull request: %+v", cs)
	}
	if m, ok := forge.FindMarker(cs[0].Body, forge.MarkerSprintFiled); !ok ||
		m.Fields["sprints"] != "add-billing" || m.Fields["issues"] != fmt.Sprintf("%d,%d", schema.Number, api.Number) {
		t.Errorf("filed marker %+v in %q", m, cs[0].Body)
	}
	if recs := r.records(filer.CodeFiled); len(recs) != 1 || recs[0].PR != pr.Number || recs[0].Issue != v.Number {
		t.Errorf("ledger: %+v", recs)
	}

	// Scenario 2: idempotent.
	r.mustRun()
	if n := len(r.filed()); n != 2 {
		t.Fatalf("second pass: %d issues", n)
	}
	if n := len(r.opsComments(pr.Number)); n != 1 {
		t.Fatalf("second pass commented again: %d comments", n)
	}
	// Even without the outcome comment, the markers keep it from filing
	// twice.
	if err := r.ops.DeleteComment(ctxOf(t), cs[0].ID); err != nil {
		t.Fatal(err)
	}
	r.mustRun()
	if n := len(r.filed()); n != 2 {
		t.Fatalf("pass without the comment: %d issues", n)
	}
}

// Scenario 4: an entry without a title files nothing from the file, and
// the refusal names the entry; it is said once.
func TestBadBlockFilesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	v := r.vision("Bad block")
	block := "- id: one\n  title: One\n  labels: [backlog]\n- id: two\n  labels: [backlog]\n"
	pr := r.mergeSprint("Bad block", map[string]string{"sprints/bad-block.md": sprintFile("Bad block", v.Number, block)})
	r.mustRun()
	if got := r.filed(); len(got) != 0 {
		t.Fatalf("filed %v", got)
	}
	cs := r.opsComments(pr.Number)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, `sprints/bad-block.md:`) || !strings.Contains(cs[0].Body, `sub-issue 2 (id "two"): no title`) {
		t.Fatalf("refusal: %+v", cs)
	}
	if _, ok := forge.FindMarker(cs[0].Body, forge.MarkerSprintRefused); !ok {
		t.Fatalf("no refusal marker in %q", cs[0].Body)
	}
	if recs := r.records(filer.CodeRefused); len(recs) != 1 || recs[0].Reason != ledger.ReasonRefused {
		t.Fatalf("ledger: %+v", recs)
	}
	if r.get(v.Number).HasLabel(forge.LabelInProgress) {
		t.Error("the vision of a refused sprint is in progress")
	}
	r.mustRun()
	if n := len(r.opsComments(pr.Number)); n != 1 {
		t.Fatalf("refused twice: %d comments", n)
	}
}

// A sprint must name a vision issue: another issue, or a number that is
// no issue, is refused.
func TestSprintOfNoVisionIsRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	plain := r.issue("Not a vision", "x", forge.LabelBacklog)
	pr := r.mergeSprint("Wrong anchor", map[string]string{"sprints/wrong-anchor.md": sprintFile("Wrong anchor", plain.Number, billingBlock(plain.Number))})
	pr2 := r.mergeSprint("No anchor", map[string]string{"sprints/no-anchor.md": sprintFile("No anchor", 9999, billingBlock(9999))})
	r.mustRun()
	if got := r.filed(); len(got) != 0 {
		t.Fatalf("filed %v", got)
	}
	for n, want := range map[int64]string{pr.Number: "is not labelled vision", pr2.Number: "vision #9999 is no issue"} {
		if cs := r.opsComments(n); len(cs) != 1 || !strings.Contains(cs[0].Body, want) {
			t.Errorf("pull request #%d: %+v, want %q", n, cs, want)
		}
	}
}

// Scenario 6: when every sub-issue is closed, the vision gets the
// completion comment once, loses in-progress and is closed.
func TestVisionCompletion(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	v := r.vision("Add billing")
	r.mergeSprint("Add billing", map[string]string{"sprints/add-billing.md": sprintFile("Add billing", v.Number, billingBlock(v.Number))})
	r.mustRun()
	filed := r.filed()
	var first int64
	for _, is := range filed {
		first = is.Number
		break
	}
	r.close(first)
	r.mustRun()
	if got := r.get(v.Number); got.State != forge.StateOpen || len(r.comments(v.Number)) != 0 {
		t.Fatalf("vision closed with a sub-issue open: %+v", got)
	}
	for _, is := range filed {
		if is.Number != first {
			r.close(is.Number)
		}
	}
	r.mustRun()
	got := r.get(v.Number)
	if got.State != forge.StateClosed || got.HasLabel(forge.LabelInProgress) {
		t.Fatalf("vision after completion: %+v", got)
	}
	cs := r.comments(v.Number)
	if len(cs) != 1 || !strings.HasPrefix(cs[0].Body, forge.VisionCompletedHeading) ||
		!strings.Contains(cs[0].Body, "_Automated closure by "+r.bot.Login+" · 2026-05-04 10:30 UTC_") {
		t.Fatalf("completion comments: %+v", cs)
	}
	if recs := r.records(filer.CodeVisionDone); len(recs) != 1 || recs[0].Issue != v.Number {
		t.Fatalf("ledger: %+v", recs)
	}
	r.mustRun()
	if n := len(r.comments(v.Number)); n != 1 {
		t.Fatalf("completion said %d times", n)
	}
}

// Scenario 7: vision #1 without sub-issues stays open while #12, whose
// sub-issues are all closed, is closed; a marker in an issue someone else
// wrote counts for nothing.
func TestExactVisionMatch(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	one := r.vision("One")
	if one.Number != 1 {
		t.Fatalf("first issue is #%d", one.Number)
	}
	for n := 2; n < 12; n++ {
		r.issue(fmt.Sprintf("filler %d", n), "x")
	}
	twelve := r.vision("Twelve")
	if twelve.Number != 12 {
		t.Fatalf("twelfth issue is #%d", twelve.Number)
	}
	fake := r.issue("fake", "x\n\n"+forge.DecomposedFrom{Vision: 1, Sprint: "fake", ID: "x"}.String())
	r.close(fake.Number)
	r.mergeSprint("Twelve", map[string]string{"sprints/twelve.md": sprintFile("Twelve", 12, "- id: only\n  title: Only\n  labels: [backlog]\n")})
	r.mustRun()
	for _, is := range r.filed() {
		r.close(is.Number)
	}
	r.mustRun()
	if got := r.get(12); got.State != forge.StateClosed {
		t.Errorf("#12 is %s", got.State)
	}
	if got := r.get(1); got.State != forge.StateOpen || len(r.comments(1)) != 0 {
		t.Errorf("#1 is %s with %d comments", got.State, len(r.comments(1)))
	}
}

// Killed after filing 2 of 5 sub-issues, the next pass files exactly the
// other 3, in dependency order, with the right numbers.
func TestKilledMidSprintResumes(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	v := r.vision("Five")
	block := `- id: e
  title: E
  depends_on: [d]
- id: a
  title: A
- id: b
  title: B
  depends_on: [a]
- id: c
  title: C
  depends_on: [a, b]
- id: d
  title: D
  depends_on: [c]
`
	pr := r.mergeSprint("Five", map[string]string{"sprints/five.md": sprintFile("Five", v.Number, block)})
	ctx, cancel := context.WithCancel(ctxOf(t))
	defer cancel()
	killed := &countingForge{ProjectForge: r.botProj, n: 2, cancel: cancel}
	if err := r.run(ctx, r.agent(killed)); err == nil {
		t.Fatal("the killed pass reported success")
	}
	first := r.filed()
	if len(first) != 2 || first["A"].Number == 0 || first["B"].Number == 0 {
		t.Fatalf("the killed pass filed %v", first)
	}
	if n := len(r.opsComments(pr.Number)); n != 0 {
		t.Fatalf("the killed pass commented %d times", n)
	}

	again := &countingForge{ProjectForge: r.botProj, n: 1 << 30, cancel: func() {}}
	if err := r.run(ctxOf(t), r.agent(again)); err != nil {
		t.Fatal(err)
	}
	if n := again.created.Load(); n != 3 {
		t.Fatalf("the next pass created %d issues, want 3", n)
	}
	all := r.filed()
	if len(all) != 5 {
		t.Fatalf("filed %d issues: %v", len(all), all)
	}
	for title, is := range first {
		if all[title].Number != is.Number {
			t.Errorf("%s was filed again", title)
		}
	}
	wantDeps := map[string][]string{"A": nil, "B": {"A"}, "C": {"A", "B"}, "D": {"C"}, "E": {"D"}}
	for title, want := range wantDeps {
		var nums []int64
		for _, w := range want {
			nums = append(nums, all[w].Number)
		}
		slices.Sort(nums)
		is := all[title]
		if got := deps.ParseFor(is.Number, is.Body); !slices.Equal(got, nums) {
			t.Errorf("%s depends on %v, want %v", title, got, nums)
		}
		for _, w := range want {
			if all[w].Number > is.Number {
				t.Errorf("%s (#%d) filed before its prerequisite %s (#%d)", title, is.Number, w, all[w].Number)
			}
		}
	}
	if n := len(r.opsComments(pr.Number)); n != 1 {
		t.Fatalf("comments after the resumed pass: %d", n)
	}
}

// Only merged sprint pull requests into the primary branch are filed: an
// open one, one closed without merging and one not titled "architect:"
// are not.
func TestOnlyMergedSprintPulls(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	v := r.vision("Pending")
	files := map[string]string{"sprints/pending.md": sprintFile("Pending", v.Number, billingBlock(v.Number))}
	r.openSprint("Pending", files)
	closed := r.openSprint("Pending", map[string]string{"sprints/pending-2.md": sprintFile("Pending", v.Number, billingBlock(v.Number))})
	if err := r.ops.ClosePull(ctxOf(t), closed.Number); err != nil {
		t.Fatal(err)
	}
	other := r.openPull("docs: not a sprint", map[string]string{"sprints/other.md": sprintFile("Other", v.Number, billingBlock(v.Number))})
	if err := r.ops.Merge(ctxOf(t), other.Number, forge.MergeOptions{HeadSHA: other.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	r.mustRun()
	if got := r.filed(); len(got) != 0 {
		t.Fatalf("filed %v", got)
	}
}

// A tick an ops event woke only files, and reads the project's issues
// only when there is a sprint to file; the schedule closes visions.
func TestEventTickOnlyFiles(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	v := r.vision("Done soon")
	r.mergeSprint("Done soon", map[string]string{"sprints/done-soon.md": sprintFile("Done soon", v.Number, "- id: only\n  title: Only\n  labels: [backlog]\n")})
	c := &listCounter{ProjectForge: r.botProj}
	r.runAs(agent.CauseEvent, c)
	if len(r.filed()) != 1 || c.lists.Load() != 1 {
		t.Fatalf("event tick: filed %v, %d issue listings", r.filed(), c.lists.Load())
	}
	for _, is := range r.filed() {
		r.close(is.Number)
	}
	c.lists.Store(0)
	r.runAs(agent.CauseEvent, c)
	if got := r.get(v.Number); got.State != forge.StateOpen || c.lists.Load() != 0 {
		t.Fatalf("an event tick with nothing to file: vision %s, %d issue listings", got.State, c.lists.Load())
	}
	r.runAs(agent.CauseSchedule, c)
	if got := r.get(v.Number); got.State != forge.StateClosed {
		t.Fatalf("the scheduled tick left the vision %s", got.State)
	}
}

package review

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/verdict"
)

func TestStore(t *testing.T) {
	st := store{dir: filepath.Join(t.TempDir(), "review")}
	if got, err := st.list(); err != nil || len(got) != 0 {
		t.Fatalf("list of a missing dir = %v, %v", got, err)
	}
	s, err := st.load(7)
	if err != nil || s.PR != 7 || s.SyncedHead != "" || s.Head != "" {
		t.Fatalf("load of a missing file = %+v, %v", s, err)
	}
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	want := &prState{PR: 7, Head: sha2, Previous: sha1, Verdict: verdict.RequestChanges, Round: 2,
		Output:        &verdict.Output{Verdict: verdict.RequestChanges, ReviewMarkdown: "x", Findings: []verdict.Finding{{Severity: verdict.High, File: "a", Line: 3, Text: "t"}}},
		CommentPosted: true, CommentBody: "body", SessionID: "sess", Errors: map[string]int{sha2: 1}, SyncedHead: sha2}
	if err := st.save(want); err != nil {
		t.Fatal(err)
	}
	if err := st.save(&prState{PR: 12}); err != nil {
		t.Fatal(err)
	}
	// The model's review file and strangers in the dir are not state.
	for _, name := range []string{"pr-7-review.json", "notes.txt", "pr-x.json"} {
		if err := os.WriteFile(filepath.Join(st.dir, name), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.load(7)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v, %v\nwant %+v", got, err, want)
	}
	if got.published(sha2) || got.published(sha1) { // the formal review is missing
		t.Error("published")
	}
	if prs, err := st.list(); err != nil || !reflect.DeepEqual(prs, []int64{7, 12}) {
		t.Fatalf("list = %v, %v", prs, err)
	}
	if err := st.remove(7); err != nil {
		t.Fatal(err)
	}
	if err := st.remove(7); err != nil {
		t.Fatalf("second remove: %v", err)
	}
	if prs, _ := st.list(); !reflect.DeepEqual(prs, []int64{12}) {
		t.Fatalf("after remove: %v", prs)
	}
}

func TestAuthorResponse(t *testing.T) {
	review1 := formatComment(commentInput{Head: sha1, Round: 1, Out: verdict.Output{Verdict: verdict.RequestChanges}})
	comments := []forge.Comment{
		{Author: "dev-bot", Body: "before the review"},
		{Author: "review-bot", Body: review1},
		{Author: "mallory", Body: review1}, // a pasted copy is not the review
		{Author: "dev-bot", Body: "Fixed the nil check."},
		{Author: "dev-bot", Body: "<!-- disinto:outcome code=x -->\nbookkeeping"},
		{Author: "review-bot", Body: formatError(sha2, "x")},
		{Author: "human", Body: "Also please keep the old flag."},
	}
	got := authorResponse(comments, "review-bot", sha1)
	want := "**dev-bot** wrote:\n\nFixed the nil check.\n\n---\n\n**human** wrote:\n\nAlso please keep the old flag."
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := authorResponse(comments, "review-bot", sha2); got != "" {
		t.Errorf("no review of sha2, got %q", got)
	}
	if got := previousReview(comments, "review-bot", sha1); got != review1 {
		t.Errorf("previousReview = %q", got)
	}
}

// A scheduled tick reads a CI state that keeps not changing only every
// ci_recheck of the project, 20 minutes where it sets none; an event tick
// always reads it.
func TestCIRecheckIsTheProjectSetting(t *testing.T) {
	if got := ciRecheck(&config.Project{}); got != 20*time.Minute {
		t.Fatalf("default recheck %s", got)
	}
	p := &config.Project{Limits: config.Limits{CIRecheck: 90 * time.Second}}
	if got := ciRecheck(p); got != 90*time.Second {
		t.Fatalf("recheck of a project with ci_recheck = 90s: %s", got)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var s prState
	s.readCI("abc", forge.CIPending, t0)
	s.readCI("abc", forge.CIPending, t0.Add(time.Minute))
	for _, c := range []struct {
		after     time.Duration
		scheduled bool
		due       bool
	}{{89 * time.Second, true, false}, {90 * time.Second, true, true}, {time.Second, false, true}} {
		if got := s.ciDue("abc", t0.Add(time.Minute+c.after), c.scheduled, ciRecheck(p)); got != c.due {
			t.Errorf("%s after the second read, scheduled %v: due %v", c.after, c.scheduled, got)
		}
	}
	if !s.ciDue("def", t0.Add(time.Minute), true, ciRecheck(p)) {
		t.Error("a new head is not read at once")
	}
}

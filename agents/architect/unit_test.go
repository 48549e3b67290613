package architect

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

func TestParseDecision(t *testing.T) {
	tests := []struct {
		name, body string
		verdict    Verdict
		reason     string
		ok         bool
	}{
		{"accept", "ACCEPT", Accept, "", true},
		{"accept after blank lines", "\n\n  ACCEPT  \nand more", Accept, "", true},
		{"reject with reason", "REJECT: too costly", Reject, "too costly", true},
		{"reject with more lines", "REJECT: too costly\nWe have no budget.", Reject, "too costly\nWe have no budget.", true},
		{"lowercase is not a decision", "accept", "", "", false},
		{"accept in a sentence", "I ACCEPT this", "", "", false},
		{"the footer is not a decision", Footer, "", "", false},
		{"reject not first", "Looks fine.\nREJECT: no", "", "", false},
		{"empty", "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, reason, ok := parseDecision(tt.body)
			if v != tt.verdict || reason != tt.reason || ok != tt.ok {
				t.Errorf("parseDecision(%q) = %q, %q, %v", tt.body, v, reason, ok)
			}
		})
	}
}

// TestDecisionsOnlyFromHumans: a bot never decides, even when listed as
// a decider; neither does anyone not listed; dismissed reviews and plain
// review comments decide nothing.
func TestDecisionsOnlyFromHumans(t *testing.T) {
	who := newPeople([]string{"alice", "dev-bot"}, []string{"dev-bot"}, "architect-bot")
	t0 := time.Date(2026, 4, 15, 8, 0, 0, 0, time.UTC)
	cs := []forge.Comment{
		{ID: 1, Author: "architect-bot", Body: Footer, Created: t0},
		{ID: 2, Author: "dev-bot", Body: "REJECT: no", Created: t0.Add(time.Second)},
		{ID: 3, Author: "mallory", Body: "ACCEPT", Created: t0.Add(2 * time.Second)},
		{ID: 4, Author: "Alice", Body: "REJECT: later", Created: t0.Add(4 * time.Second)},
	}
	rs := []forge.Review{
		{ID: 7, Author: "alice", State: forge.ReviewApprove, Submitted: t0.Add(3 * time.Second)},
		{ID: 8, Author: "alice", State: forge.ReviewRequestChanges, Dismissed: true, Submitted: t0.Add(5 * time.Second)},
		{ID: 9, Author: "alice", State: forge.ReviewComment, Submitted: t0.Add(6 * time.Second)},
	}
	ds := decisions(cs, rs, who)
	if len(ds) != 2 || ds[0].ID != "review-7" || ds[0].Verdict != Accept || ds[1].ID != "comment-4" || ds[1].Verdict != Reject {
		t.Fatalf("decisions %+v", ds)
	}
}

// TestClassify walks a sprint through the machine's stages from forge
// facts alone (no local record), as after a lost data dir.
func TestClassify(t *testing.T) {
	who := newPeople([]string{"alice"}, nil, "architect-bot")
	v := &view{pr: sprintPR{PullRequest: forge.PullRequest{Number: 3, State: forge.StateOpen}}, rec: &prRecord{}, who: who, me: "architect-bot"}
	step := func(want Stage, add ...forge.Comment) {
		t.Helper()
		v.comments = append(v.comments, add...)
		if got := classify(v); got != want {
			t.Fatalf("stage %q, want %q", got, want)
		}
	}
	bot := func(id int64, body string) forge.Comment {
		return forge.Comment{ID: id, Author: "architect-bot", Body: body}
	}
	human := func(id int64, body string) forge.Comment { return forge.Comment{ID: id, Author: "alice", Body: body} }
	step(StagePitched)
	step(StageAwaitingDecision, bot(1, Footer))
	step(StageAwaitingDecision, forge.Comment{ID: 2, Author: "bob", Body: "ACCEPT"})
	step(StageAccepting, human(3, "ACCEPT"))
	step(StageQuestions, bot(4, "Accepted.\n\n"+ackMarker(Decision{ID: "comment-3", Verdict: Accept})))
	step(StageAwaitingAnswers, bot(5, "Q1: which?\n\n"+marker("sprint-reply", map[string]string{"through": "3", "ready": "false"})))
	step(StageAccepting, human(6, "ACCEPT"))
	v.rec.Decisions = append(v.rec.Decisions, "comment-6") // what the step does for a second acceptance
	step(StageAwaitingAnswers)
	step(StageAnswers, human(7, "The first."))
	step(StageReady, bot(8, "Ready.\n\n"+marker("sprint-reply", map[string]string{"through": "7", "ready": "true"})))
	step(StageRejecting, human(9, "REJECT: changed my mind"))
	step(StageRejecting, bot(10, "Rejected.\n\n"+ackMarker(Decision{ID: "comment-9", Verdict: Reject})))
	v.pr.State = forge.StateClosed
	step(StageClosed)
	v.pr.Merged = true
	step(StageMerged)
}

// TestFreeBranch: a leftover head or sprint branch of vision n is never
// reused; other visions' branches do not count.
func TestFreeBranch(t *testing.T) {
	pulls := []forge.PullRequest{
		{Number: 1, Head: "architect/sprint-vision-9"},
		{Number: 2, Head: "refs/pull/2/head", Author: "architect-bot", Title: "architect: x",
			Body: sprintMarker(sprintID{Vision: 9, Slug: "x", Branch: "architect/sprint-vision-9-2"})},
		{Number: 3, Head: "architect/sprint-vision-90"},
	}
	if got := freeBranch(9, pulls, "architect-bot"); got != "architect/sprint-vision-9-3" {
		t.Errorf("free branch %q", got)
	}
	if got := freeBranch(5, pulls, "architect-bot"); got != "architect/sprint-vision-5" {
		t.Errorf("free branch %q", got)
	}
}

func TestParseReply(t *testing.T) {
	if r, err := ParseReply([]byte(`{"comments": ["Q1: a?"], "ready": true}`)); err != nil || len(r.Comments) != 1 || !r.Ready {
		t.Errorf("%+v %v", r, err)
	}
	for _, bad := range []string{`{"comments": [""]}`, `{"comment": []}`, `[]`, `{"comments": ["a","a","a","a","a","a","a","a","a","a","a"]}`} {
		if _, err := ParseReply([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestForgeFS: files come from the forge at the ref, a missing one is
// fs.ErrNotExist, and fs.ReadFile and Open agree.
func TestForgeFS(t *testing.T) {
	get := func(_ context.Context, path, ref string) (forge.File, error) {
		if path == "VISION.md" && ref == "main" {
			return forge.File{Path: path, Content: []byte("# Vision\n")}, nil
		}
		return forge.File{}, fmt.Errorf("get %s: %w", path, forge.ErrNotFound)
	}
	fsys := forgeFS{ctx: context.Background(), get: get, ref: "main"}
	if data, err := fs.ReadFile(fsys, "VISION.md"); err != nil || string(data) != "# Vision\n" {
		t.Fatalf("%q %v", data, err)
	}
	f, err := fsys.Open("VISION.md")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != 9 || st.Name() != "VISION.md" || st.IsDir() {
		t.Errorf("stat %v %v", st, err)
	}
	if _, err := fs.ReadFile(fsys, "AGENTS.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := fsys.Open("../x"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("invalid path: %v", err)
	}
}

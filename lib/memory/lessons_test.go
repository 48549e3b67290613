package memory_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/memory"
)

func TestMergeLessonsNewestFirstOnceEach(t *testing.T) {
	current := "# Lessons learned\n\n- Run the tests before pushing.\n- Keep commits small.\n"
	fresh := "Some preamble the model wrote.\n\n- Read CI logs from the bottom up.\n* keep commits  small\n- Run the tests before pushing!\n"
	got := memory.MergeLessons(fresh, current, memory.LessonsCap)
	want := []string{"Read CI logs from the bottom up.", "keep commits small", "Run the tests before pushing!"}
	if l := memory.ParseLessons(got); strings.Join(l, "|") != strings.Join(want, "|") {
		t.Errorf("lessons %q, want %q\n%s", l, want, got)
	}
	if strings.Contains(got, "preamble") {
		t.Errorf("text outside bullets kept:\n%s", got)
	}
}

func TestMergeLessonsCapDropsTheOldest(t *testing.T) {
	var current strings.Builder
	for i := range 40 {
		fmt.Fprintf(&current, "- old lesson %02d: %s\n", i, strings.Repeat("x", 60))
	}
	fresh := "- the newest lesson\n"
	got := memory.MergeLessons(fresh, current.String(), memory.LessonsCap)
	if len(got) > memory.LessonsCap {
		t.Fatalf("merged lessons are %d bytes, cap %d", len(got), memory.LessonsCap)
	}
	l := memory.ParseLessons(got)
	if l[0] != "the newest lesson" || !strings.HasPrefix(l[1], "old lesson 00") {
		t.Errorf("order: %q", l[:2])
	}
	if strings.Contains(got, "old lesson 39") {
		t.Error("the oldest lesson survived the cap")
	}
	// Merging again changes nothing: the file does not grow.
	if again := memory.MergeLessons("", got, memory.LessonsCap); again != got {
		t.Errorf("a second merge changed the file:\n%s\n---\n%s", got, again)
	}
}

func TestMergeLessonsCutsOneOverlongLesson(t *testing.T) {
	got := memory.MergeLessons("- "+strings.Repeat("é", 1000)+"\n", "", memory.LessonsCap)
	l := memory.ParseLessons(got)
	if len(l) != 1 || len(l[0]) > memory.MaxLesson || !strings.HasSuffix(l[0], "…") {
		t.Fatalf("overlong lesson: %d bytes %q", len(l[0]), l)
	}
	if memory.MergeLessons("no bullets here", "", memory.LessonsCap) != "" {
		t.Error("a merge without lessons produced a file")
	}
}

func TestCheckOutboxRefuses(t *testing.T) {
	for name, data := range map[string][]byte{
		"too large":  []byte("- " + strings.Repeat("a", memory.MaxOutbox)),
		"not utf-8":  []byte("- a\xff lesson\n"),
		"marker":     []byte("- a lesson <!-- disinto:claim -->\n"),
		"control":    []byte("- a \x1b[31mred\x1b[0m lesson\n"),
		"no lessons": []byte("I could not find anything to learn."),
	} {
		if err := memory.CheckOutbox(data); !errors.Is(err, memory.ErrBadLessons) {
			t.Errorf("%s: CheckOutbox = %v", name, err)
		}
	}
	if err := memory.CheckOutbox([]byte("- Rebase before asking for review.\n")); err != nil {
		t.Errorf("a good outbox was refused: %v", err)
	}
}

func TestDigestBookkeeping(t *testing.T) {
	entry := func(n int) string {
		return fmt.Sprintf("\n## 10:%02d:00Z dev: p issue #%d, merged\n\n- run r, 1m0s\n", n, n)
	}
	day1 := "# Journal of dev-bot, 2026-11-30\n" + entry(1) + entry(2)
	day2 := "# Journal of dev-bot, 2026-12-01\n" + entry(3)
	content := map[string]string{"journal/2026-11-30.md": day1, "journal/2026-12-01.md": day2}
	read := func(p string) ([]byte, error) { return []byte(content[p]), nil }
	list := func() []git.TreeFile {
		return []git.TreeFile{{Path: "journal/.gitkeep"}, {Path: "journal/2026-11-30.md", Size: int64(len(content["journal/2026-11-30.md"]))},
			{Path: "journal/2026-12-01.md", Size: int64(len(content["journal/2026-12-01.md"]))}}
	}
	st := memory.DigestState{}
	if n := memory.Undigested(list(), st); n != int64(len(day1)+len(day2)) {
		t.Fatalf("undigested %d, want %d", n, len(day1)+len(day2))
	}
	input, next, err := memory.DigestInput(list(), st, read, memory.MaxDigestInput)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(input, "issue #1") || strings.Index(input, "issue #1") > strings.Index(input, "issue #3") {
		t.Errorf("input not oldest first:\n%s", input)
	}
	if n := memory.Undigested(list(), next); n != 0 {
		t.Errorf("after the digest %d bytes are undigested", n)
	}
	// New entries: only they are digested next time.
	content["journal/2026-12-01.md"] += entry(4)
	if n := memory.Undigested(list(), next); n != int64(len(entry(4))) {
		t.Errorf("undigested %d, want the new entry's %d", n, len(entry(4)))
	}
	input, next, err = memory.DigestInput(list(), next, read, memory.MaxDigestInput)
	if err != nil || strings.Contains(input, "issue #3") || !strings.Contains(input, "issue #4") {
		t.Errorf("second digest (%v):\n%s", err, input)
	}
	if input, _, _ := memory.DigestInput(list(), next, read, memory.MaxDigestInput); input != "" {
		t.Errorf("nothing left, yet input:\n%s", input)
	}

	// A small budget stops at an entry boundary; the rest waits.
	input, part, err := memory.DigestInput(list(), memory.DigestState{}, read, len(day1)-len(entry(2))+10)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(input, "issue #1") || strings.Contains(input, "issue #2") {
		t.Errorf("budgeted input:\n%s", input)
	}
	rest, _, _ := memory.DigestInput(list(), part, read, memory.MaxDigestInput)
	if strings.Contains(rest, "issue #1") || !strings.Contains(rest, "issue #2") || !strings.Contains(rest, "issue #4") {
		t.Errorf("the rest after a budgeted digest:\n%s", rest)
	}
}

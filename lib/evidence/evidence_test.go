package evidence

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/disinto/disinto/lib/edge"
)

var today = time.Date(2026, 12, 2, 15, 4, 5, 0, time.UTC)

func day(offset int, body string) Day {
	return Day{Date: DateOf(today.AddDate(0, 0, -offset)), Body: body}
}

// A file round-trips through ParseDays, and a fresh day replaces the
// same day while the others stay, newest first.
func TestMergeReplacesTheSameDay(t *testing.T) {
	old := CIFile.Render([]Day{day(0, "- morning"), day(1, "- yesterday"), day(3, "- older")}, today, Bounds{})
	got := ParseDays(old)
	if len(got) != 3 || got[0].Body != "- morning" || got[2].Date != day(3, "").Date {
		t.Fatalf("parsed %+v", got)
	}
	text := CIFile.Update(old, []Day{day(0, "- evening"), day(2, "- filled in")}, today, Bounds{})
	days := ParseDays(text)
	var dates, bodies []string
	for _, d := range days {
		dates, bodies = append(dates, d.Date), append(bodies, d.Body)
	}
	if want := []string{"2026-12-02", "2026-12-01", "2026-11-30", "2026-11-29"}; fmt.Sprint(dates) != fmt.Sprint(want) {
		t.Errorf("dates %v, want %v", dates, want)
	}
	if want := []string{"- evening", "- yesterday", "- filled in", "- older"}; fmt.Sprint(bodies) != fmt.Sprint(want) {
		t.Errorf("bodies %v, want %v", bodies, want)
	}
	if again := CIFile.Update(text, []Day{day(0, "- evening")}, today, Bounds{}); again != text {
		t.Errorf("a rerun with the same day changed the file:\n%s\nthen\n%s", text, again)
	}
}

// Days beyond the window, and days in the future, are dropped.
func TestRenderRollsTheWindow(t *testing.T) {
	text := CIFile.Render([]Day{day(-1, "- tomorrow"), day(0, "- today"), day(6, "- six"), day(7, "- seven")}, today, Bounds{Days: 7})
	days := ParseDays(text)
	if len(days) != 2 || days[0].Body != "- today" || days[1].Body != "- six" {
		t.Errorf("kept %+v, want today and six days ago", days)
	}
	if !strings.Contains(text, "the last 7 days") {
		t.Errorf("the header does not state the window:\n%s", text)
	}
}

// The byte cap drops the oldest days first, and cuts a day too large
// alone; the file never exceeds it.
func TestRenderCapsBytes(t *testing.T) {
	var days []Day
	for i := 0; i < 30; i++ {
		days = append(days, day(i, strings.Repeat(fmt.Sprintf("- line of day %d\n", i), 10)))
	}
	const limit = 2000
	text := ReviewsFile.Render(days, today, Bounds{MaxBytes: limit})
	if len(text) > limit {
		t.Fatalf("%d bytes, over the cap of %d", len(text), limit)
	}
	kept := ParseDays(text)
	if len(kept) == 0 || kept[0].Date != days[0].Date {
		t.Fatalf("kept %+v: the newest day must stay", kept)
	}
	for i, d := range kept {
		if d.Date != days[i].Date {
			t.Errorf("kept day %d is %s, want %s (oldest dropped first)", i, d.Date, days[i].Date)
		}
	}
	if len(kept) == len(days) {
		t.Error("nothing was dropped")
	}

	huge := ReviewsFile.Render([]Day{day(0, strings.Repeat("- a long line of one day\n", 500))}, today, Bounds{MaxBytes: limit})
	if len(huge) > limit || !strings.Contains(huge, "cut to fit") {
		t.Errorf("one huge day: %d bytes, cut note %t", len(huge), strings.Contains(huge, "cut to fit"))
	}
	if d := ParseDays(huge); len(d) != 1 || d[0].Date != days[0].Date {
		t.Errorf("one huge day parsed as %+v", d)
	}
}

// A heading someone wrote into a day's text with another date is not a
// day of its own once read back, unless it is a heading line.
func TestParseDaysIgnoresOtherText(t *testing.T) {
	text := "# CI health\n\nintro ## 2020-01-01\n\n## 2026-12-02\n\n- one\n## not a date\n\n## 2026-13-45\n- two\n"
	days := ParseDays(text)
	if len(days) != 1 || !strings.Contains(days[0].Body, "- one") || !strings.Contains(days[0].Body, "- two") {
		t.Errorf("parsed %+v", days)
	}
}

func TestEngagement(t *testing.T) {
	at := func(d time.Time) string { return fmt.Sprintf("%d.5", d.Unix()) }
	y := today.AddDate(0, 0, -1)
	lines := []string{
		`{"logger":"http.log.access.log0","ts":` + at(y) + `,"request":{"remote_ip":"a","uri":"/chat/login"},"status":200}`,
		`{"logger":"http.log.access.log0","ts":` + at(y) + `,"request":{"remote_ip":"a","uri":"/chat/x?y=1"},"status":500}`,
		`{"logger":"http.log.access.log0","ts":` + at(y) + `,"request":{"remote_ip":"b","uri":"/chat/x"},"status":403}`,
		`{"logger":"http.log.access.log0","ts":` + at(today) + `,"request":{"remote_ip":"a","uri":"/o/r"},"status":200}`,
		`{"logger":"http.log.access.log0","ts":` + at(today) + `,"request":{"remote_ip":"c","uri":"/o/r"},"status":200}`,
		`{"logger":"http.log.access.log0","ts":` + at(today.AddDate(0, 0, -40)) + `,"request":{"remote_ip":"c","uri":"/o/r"},"status":200}`,
		`garbage`,
	}
	days, skipped, err := Engagement(strings.NewReader(strings.Join(lines, "\n")), edge.Config{}.Routes(), today.AddDate(0, 0, -29))
	if err != nil {
		t.Fatal(err)
	}
	if skipped != 1 {
		t.Errorf("skipped %d, want 1", skipped)
	}
	text := EngagementFile.Render(days, today, Bounds{})
	got := ParseDays(text)
	if len(got) != 2 {
		t.Fatalf("days %+v", got)
	}
	for _, want := range []string{"| forge | 2 | 0 | 0 | 2 |"} {
		if !strings.Contains(got[0].Body, want) {
			t.Errorf("today lacks %q:\n%s", want, got[0].Body)
		}
	}
	for _, want := range []string{"| chat-login | 1 | 0 | 0 | 1 |", "| chat | 2 | 1 | 1 | 2 |"} {
		if !strings.Contains(got[1].Body, want) {
			t.Errorf("yesterday lacks %q:\n%s", want, got[1].Body)
		}
	}
	if strings.Index(got[1].Body, "chat-login") > strings.Index(got[1].Body, "| chat |") {
		t.Errorf("routes not in the edge's order:\n%s", got[1].Body)
	}
}

func TestText(t *testing.T) {
	ci := CIFile.Render([]Day{day(0, "- commits checked: 2; green 1, red 1, pending 0")}, today, Bounds{})
	fsys := fstest.MapFS{CIPath: {Data: []byte(ci)}}
	got := Text(fsys)
	for _, want := range []string{"### evidence/ci.md\n\n### CI health", "#### " + DateOf(today), "green 1, red 1",
		"### evidence/reviews.md\n\nNot written yet", "### evidence/engagement.md\n\nNot written yet"} {
		if !strings.Contains(got, want) {
			t.Errorf("Text lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(Text(nil), "No ops repository") {
		t.Error("Text(nil) does not say there is no ops repository")
	}
}

package git

import (
	"strings"
	"testing"
	"time"
)

// Progress lines reach the report once the command has taken
// progressQuiet, then at most every progressEvery; only lines git ends
// with a newline are kept for the error message.
func TestProgressWriterThrottles(t *testing.T) {
	now := time.Unix(0, 0)
	var got []string
	w := newProgressWriter(200, func() time.Time { return now }, func(l string) { got = append(got, l) })
	write := func(s string) {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	write("Cloning into 'x'...\nReceiving objects:   1% (1/100)\r")
	now = now.Add(progressQuiet)
	write("Receiving objects:  40% (40/100)\r")
	now = now.Add(progressEvery / 2)
	write("Receiving objects:  60% (60/100)\r")
	now = now.Add(progressEvery / 2)
	write("Receiving objects: 100% (100/100), done.\nfatal: the remote end hung up unexpectedly\n")
	want := []string{"Receiving objects:  40% (40/100)", "Receiving objects: 100% (100/100), done."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("reported %q, want %q", got, want)
	}
	kept := w.String()
	if strings.Contains(kept, "40%") || !strings.Contains(kept, "Cloning into") || !strings.Contains(kept, "hung up") {
		t.Errorf("kept for the error message: %q", kept)
	}
	small := newProgressWriter(10, time.Now, func(string) {})
	_, _ = small.Write([]byte("a line longer than ten bytes\nok\n"))
	if small.String() != "ok\n" {
		t.Errorf("kept %q past its bound", small.String())
	}
}

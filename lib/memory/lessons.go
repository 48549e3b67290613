package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/text"
)

// LessonsFile is the lessons file at the top of a .profile repository.
const LessonsFile = "lessons.md"

// LessonsCap bounds the lessons file: it is what a prompt shows of it
// (formula.LessonsLimit), so nothing in the file is dead weight.
const LessonsCap = formula.LessonsLimit

// MaxLesson bounds one lesson; a longer one is cut on a rune boundary.
const MaxLesson = 400

// MaxOutbox bounds what a digest session may write: more than this is
// refused outright rather than cut.
const MaxOutbox = 16 << 10

// ErrBadLessons means a digest session wrote lessons the daemon refuses.
var ErrBadLessons = errors.New("lessons refused")

// lessonsHeading opens the lessons file.
const lessonsHeading = "# Lessons learned\n\nNewest first, digested from the journal. Every line starting with \"- \" is a lesson; " +
	"nothing else in this file is kept.\n\n"

// ParseLessons returns the lessons of a lessons file or of a digest's
// output: every bullet ("- " or "* ") with its continuation lines joined,
// in order. Headings, blank lines and text outside bullets are dropped.
func ParseLessons(doc string) []string {
	var out []string
	cur := -1
	for line := range strings.SplitSeq(doc, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* "):
			out = append(out, strings.TrimSpace(t[2:]))
			cur = len(out) - 1
		case t == "" || strings.HasPrefix(t, "#"):
			cur = -1
		case cur >= 0 && (line != t): // an indented continuation
			out[cur] += " " + t
		}
	}
	for i, l := range out {
		out[i] = text.Clip(strings.Join(strings.Fields(l), " "), MaxLesson)
	}
	return slicesDeleteEmpty(out)
}

func slicesDeleteEmpty(in []string) []string {
	out := in[:0]
	for _, s := range in {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// lessonKey is what two lessons share when they say the same thing: case,
// spacing and trailing punctuation do not count.
func lessonKey(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

// MergeLessons returns the lessons file that results from adding fresh
// lessons (a digest's output, newest first) to the current file: fresh
// lessons first, then the current ones, each lesson once (the newest
// copy wins), cut to limit bytes by dropping the oldest lessons whole.
// The result never exceeds limit; it is "" when no lesson remains.
func MergeLessons(fresh, current string, limit int) string {
	seen := map[string]bool{}
	var b strings.Builder
	b.WriteString(lessonsHeading)
	n := 0
	for _, l := range append(ParseLessons(fresh), ParseLessons(current)...) {
		k := lessonKey(l)
		if seen[k] {
			continue
		}
		seen[k] = true
		line := "- " + l + "\n"
		if b.Len()+len(line) > limit {
			continue // a shorter, older lesson may still fit
		}
		b.WriteString(line)
		n++
	}
	if n == 0 {
		return ""
	}
	return b.String()
}

// CheckOutbox validates what a digest session wrote before anything of it
// is used: bounded, UTF-8, free of hidden markers and control characters,
// and holding at least one lesson.
func CheckOutbox(data []byte) error {
	switch {
	case len(data) > MaxOutbox:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrBadLessons, len(data), MaxOutbox)
	case !utf8.Valid(data):
		return fmt.Errorf("%w: not UTF-8", ErrBadLessons)
	case bytes.Contains(data, []byte("<!--")) || bytes.Contains(data, []byte("-->")):
		return fmt.Errorf("%w: holds a hidden marker", ErrBadLessons)
	}
	for _, r := range string(data) {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return fmt.Errorf("%w: holds control character %U", ErrBadLessons, r)
		}
	}
	if len(ParseLessons(string(data))) == 0 {
		return fmt.Errorf("%w: no lesson (a lesson is a line starting with \"- \")", ErrBadLessons)
	}
	return nil
}

// lessonsCache holds the lessons file as of one head of the checkout.
type lessonsCache struct {
	mu   sync.Mutex
	head string
	text string
}

func (c *lessonsCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.text)
}

// Lessons returns the bot's lessons as its .profile checkout last fetched
// them (what landed on the primary branch), cut to LessonsCap; "" when
// there are none or the checkout is not there yet. The file is read again
// only when the checkout's head moved.
func (j *Journal) Lessons(ctx context.Context) string {
	if j.repo == nil {
		return ""
	}
	c := &j.lessons
	files, head, err := j.repo.Local(ctx)
	if err != nil {
		j.log.Debug().Err(err).Str("bot", j.bot).Msg("lessons not read")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || head == "" || head == c.head {
		return c.text
	}
	data, err := files.Read(LessonsFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	case err != nil:
		j.log.Debug().Err(err).Str("bot", j.bot).Msg("lessons not read")
		return c.text
	}
	c.head, c.text = head, text.Clip(strings.ToValidUTF8(string(data), ""), LessonsCap)
	return c.text
}

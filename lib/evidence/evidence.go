// Package evidence writes the evidence the planner and the predictor
// read in the project's ops repository (spec 40 §2.2, §3.2): how CI went
// (evidence/ci.md), how reviews went (evidence/reviews.md) and, with the
// edge on, how much each route of the edge was used
// (evidence/engagement.md).
//
// Each file is one section per UTC day, newest first. A run computes the
// days its sources still cover and puts them in place of the same days
// of the file, keeping the older days it can no longer compute (a rolled
// access log, pull requests gone quiet); a file keeps at most Days days
// and MaxBytes bytes, the oldest days dropped first. A run on the same
// day rewrites that day, and a run that changes no file commits nothing.
package evidence

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/text"
)

// The files, in the ops repository.
const (
	Dir            = "evidence"
	CIPath         = Dir + "/ci.md"
	ReviewsPath    = Dir + "/reviews.md"
	EngagementPath = Dir + "/engagement.md"
)

// Paths are the files the planner and the predictor read, in the order
// their prompts show them.
var Paths = []string{CIPath, ReviewsPath, EngagementPath}

// Bounds of one file.
const (
	// DefaultDays is the rolling window: days older than this many are
	// dropped.
	DefaultDays = 30
	// DefaultMaxBytes caps a file; the oldest days go first.
	DefaultMaxBytes = 12 << 10
)

// Bounds limit a file.
type Bounds struct {
	Days     int
	MaxBytes int
}

func (b Bounds) withDefaults() Bounds {
	if b.Days <= 0 {
		b.Days = DefaultDays
	}
	if b.MaxBytes <= 0 {
		b.MaxBytes = DefaultMaxBytes
	}
	return b
}

// Day is one day's section of a file: Date is YYYY-MM-DD (UTC), Body the
// lines under its heading.
type Day struct {
	Date string
	Body string
}

// dateLayout is a day's heading.
const dateLayout = "2006-01-02"

// DateOf is the day of t, in UTC.
func DateOf(t time.Time) string { return t.UTC().Format(dateLayout) }

var dayHeading = regexp.MustCompile(`^## (\d{4}-\d{2}-\d{2})\s*$`)

// ParseDays reads the day sections of a file this package wrote; text
// before the first day's heading is the header, which is written anew.
// Sections with the same date keep the first.
func ParseDays(text string) []Day {
	var out []Day
	seen := map[string]bool{}
	var cur *Day
	var body []string
	flush := func() {
		if cur != nil && !seen[cur.Date] {
			seen[cur.Date] = true
			cur.Body = strings.Trim(strings.Join(body, "\n"), "\n")
			out = append(out, *cur)
		}
		cur, body = nil, nil
	}
	for _, l := range strings.Split(text, "\n") {
		if m := dayHeading.FindStringSubmatch(l); m != nil {
			if _, err := time.Parse(dateLayout, m[1]); err == nil {
				flush()
				cur = &Day{Date: m[1]}
				continue
			}
		}
		if cur != nil {
			body = append(body, l)
		}
	}
	flush()
	return out
}

// Merge puts fresh in place of the same days of old and keeps old's
// other days, newest first.
func Merge(old, fresh []Day) []Day {
	byDate := map[string]Day{}
	for _, d := range old {
		if _, ok := byDate[d.Date]; !ok {
			byDate[d.Date] = d
		}
	}
	for _, d := range fresh {
		byDate[d.Date] = d
	}
	out := make([]Day, 0, len(byDate))
	for _, d := range byDate {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Date > out[j].Date })
	return out
}

// File is one evidence file: its title and what it measures.
type File struct {
	Path  string
	Title string
	// About says what a day's section counts and where it comes from.
	About string
}

// Render writes days (newest first, one section a date) as the file's text within b as of
// today: days more than b.Days before today, and days after it, are
// dropped, then the oldest days until the text fits b.MaxBytes. A day
// too large alone is cut.
func (f File) Render(days []Day, today time.Time, b Bounds) string {
	b = b.withDefaults()
	last := DateOf(today)
	first := DateOf(today.AddDate(0, 0, -(b.Days - 1)))
	var keep []Day
	for _, d := range Merge(nil, days) {
		if d.Date >= first && d.Date <= last {
			keep = append(keep, d)
		}
	}
	head := fmt.Sprintf("# %s\n\n%s\n\nWritten by the factory every day from its sources: the last %d days, newest first, "+
		"at most %d bytes; edits are overwritten.\n", f.Title, f.About, b.Days, b.MaxBytes)
	render := func(ds []Day) string {
		var s strings.Builder
		s.WriteString(head)
		for _, d := range ds {
			fmt.Fprintf(&s, "\n## %s\n\n%s\n", d.Date, strings.Trim(d.Body, "\n"))
		}
		return s.String()
	}
	for len(keep) > 0 && len(render(keep)) > b.MaxBytes {
		if len(keep) == 1 {
			room := b.MaxBytes - len(render([]Day{{Date: keep[0].Date}})) - len(cutNote)
			keep[0].Body = clip(keep[0].Body, room) + cutNote
			if len(render(keep)) > b.MaxBytes {
				keep = nil
			}
			break
		}
		keep = keep[:len(keep)-1]
	}
	if len(keep) == 0 {
		return head + "\nNothing measured yet.\n"
	}
	return render(keep)
}

// cutNote ends a day cut to fit the file.
const cutNote = "\n- … (cut to fit the file's size)"

// clip cuts s to at most n bytes, at a line end when there is one.
func clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i > 0 {
		return s[:i]
	}
	return text.Clip(s, n)
}

// Update is f's text after putting fresh in place of old's days, within
// b as of today.
func (f File) Update(old string, fresh []Day, today time.Time, b Bounds) string {
	return f.Render(Merge(ParseDays(old), fresh), today, b)
}

// The three files.
var (
	CIFile = File{Path: CIPath, Title: "CI health",
		About: "Per day, the commits of the project's pull requests whose CI finished (their last commit status that day): " +
			"green, red, still pending, and the pull requests that went red."}
	ReviewsFile = File{Path: ReviewsPath, Title: "Review outcomes",
		About: "Per day, the formal reviews of the project's pull requests by the review bot: approvals, changes requested, " +
			"comments, and the pull requests they were about with the round each was."}
	EngagementFile = File{Path: EngagementPath, Title: "Engagement",
		About: "Per day, the requests the edge served per route (from its access log): how many, how many failed " +
			"(4xx, 5xx), and how many distinct clients."}
)

package daemon

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/agent"
)

// attempts reads "ci 1/3, review 2/5", or "-" when none were spent.
func attempts(it agent.Item) string {
	keys := make([]string, 0, len(it.Attempts))
	for k := range it.Attempts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		if lim, ok := it.Limits[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %d/%d", k, it.Attempts[k], lim))
		} else {
			parts = append(parts, fmt.Sprintf("%s %d", k, it.Attempts[k]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// age is how long ago t was, to the second (minute past an hour).
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d >= time.Hour {
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}

// interval reads d the way people write intervals: "30s", "2m", "10m",
// "1m30s", "1h30m", "6h", whole seconds (below a second as Go prints it),
// without the zero units Duration.String adds ("10m0s").
func interval(d time.Duration) string {
	if d < time.Second {
		return d.String()
	}
	d = d.Round(time.Second)
	h, m, s := d/time.Hour, d%time.Hour/time.Minute, d%time.Minute/time.Second
	var b strings.Builder
	if h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if s > 0 {
		fmt.Fprintf(&b, "%ds", s)
	}
	return b.String()
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine is s on one line, cut to n bytes with an ellipsis; "-" when empty.
func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return orDash(s)
}

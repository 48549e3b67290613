package daemon

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/ledger"
)

// SpendDays is the window of the spend report.
const SpendDays = 14

// Spend is what the sessions spent over the last SpendDays days, per day
// and role, as the ledger recorded it (the gateway's metered tokens), and
// what a merged pull request cost on average.
type Spend struct {
	// Days are oldest first, every day of the window present.
	Days []SpendDay `json:"days"`
	// Merged counts the pull requests merged in the window.
	Merged int `json:"merged"`
	// PerMergedUSD and PerMergedTokens are the window's spend of every
	// role divided by Merged; zero without a merge.
	PerMergedUSD    float64 `json:"per_merged_usd"`
	PerMergedTokens int64   `json:"per_merged_tokens"`
}

// SpendDay is one day of the spend report.
type SpendDay struct {
	// Day is the local date, YYYY-MM-DD.
	Day   string      `json:"day"`
	Roles []RoleSpend `json:"roles"`
}

// RoleSpend is what one role's runs of one day (or of the window) spent.
type RoleSpend struct {
	Role    string  `json:"role"`
	Runs    int     `json:"runs"`
	Tokens  int64   `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
}

// Spending reads the spend report of the data dir's ledger up to now.
func Spending(dataDir string, now time.Time) *Spend {
	y, m, d := now.Date()
	first := time.Date(y, m, d, 0, 0, 0, 0, now.Location()).AddDate(0, 0, -(SpendDays - 1))
	recs, _, err := ledger.Read(datadir.New(dataDir).Ledger(), ledger.Filter{Since: first})
	if err != nil {
		return nil
	}
	return spendOf(recs, first)
}

// spendOf folds recs into the report of the SpendDays days from first.
func spendOf(recs []ledger.Record, first time.Time) *Spend {
	s := &Spend{Days: make([]SpendDay, SpendDays)}
	index := map[string]int{}
	for i := range s.Days {
		s.Days[i].Day = first.AddDate(0, 0, i).Format(time.DateOnly)
		index[s.Days[i].Day] = i
	}
	byDay := make([]map[string]*RoleSpend, SpendDays)
	var total RoleSpend
	for _, r := range recs {
		i, ok := index[r.End.In(first.Location()).Format(time.DateOnly)]
		if !ok {
			continue
		}
		if byDay[i] == nil {
			byDay[i] = map[string]*RoleSpend{}
		}
		rs := byDay[i][r.Role]
		if rs == nil {
			rs = &RoleSpend{Role: r.Role}
			byDay[i][r.Role] = rs
		}
		tokens := r.InputTokens + r.OutputTokens
		rs.Runs++
		rs.Tokens += tokens
		rs.CostUSD += r.CostUSD
		total.Tokens += tokens
		total.CostUSD += r.CostUSD
		if r.Reason == ledger.ReasonMerged {
			s.Merged++
		}
	}
	for i, roles := range byDay {
		s.Days[i].Roles = []RoleSpend{}
		for _, rs := range roles {
			s.Days[i].Roles = append(s.Days[i].Roles, *rs)
		}
		sort.Slice(s.Days[i].Roles, func(a, b int) bool { return s.Days[i].Roles[a].Role < s.Days[i].Roles[b].Role })
	}
	if s.Merged > 0 {
		s.PerMergedUSD = total.CostUSD / float64(s.Merged)
		s.PerMergedTokens = total.Tokens / int64(s.Merged)
	}
	return s
}

// byRole sums the window per role, sorted by role.
func (s *Spend) byRole() []RoleSpend {
	sum := map[string]*RoleSpend{}
	for _, d := range s.Days {
		for _, r := range d.Roles {
			t := sum[r.Role]
			if t == nil {
				t = &RoleSpend{Role: r.Role}
				sum[r.Role] = t
			}
			t.Runs += r.Runs
			t.Tokens += r.Tokens
			t.CostUSD += r.CostUSD
		}
	}
	out := make([]RoleSpend, 0, len(sum))
	for _, r := range sum {
		out = append(out, *r)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Role < out[b].Role })
	return out
}

// tokens reads n as people do: 950, 12.3k, 4.5M.
func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// writeText writes the spend lines of `disinto status`.
func (s *Spend) writeText(w io.Writer) {
	roles := s.byRole()
	if len(roles) == 0 {
		return
	}
	parts := make([]string, 0, len(roles))
	for _, r := range roles {
		parts = append(parts, fmt.Sprintf("%s %s tokens $%.2f (%d runs)", r.Role, tokens(r.Tokens), r.CostUSD, r.Runs))
	}
	fmt.Fprintf(w, "spend, last %d days: %s\n", SpendDays, strings.Join(parts, "; "))
	if s.Merged > 0 {
		fmt.Fprintf(w, "per merged pull request: $%.2f, %s tokens (%d merged)\n", s.PerMergedUSD, tokens(s.PerMergedTokens), s.Merged)
	}
}

// chartPalette colours the roles of the chart, in the order of their names.
var chartPalette = []string{"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac"}

// Chart draws the window's tokens per day as bars stacked by role, with a
// legend: an inline SVG, no script.
func (s *Spend) Chart() template.HTML {
	roles := s.byRole()
	if len(roles) == 0 {
		return ""
	}
	colour := map[string]string{}
	for i, r := range roles {
		colour[r.Role] = chartPalette[i%len(chartPalette)]
	}
	var peak int64
	for _, d := range s.Days {
		var t int64
		for _, r := range d.Roles {
			t += r.Tokens
		}
		peak = max(peak, t)
	}
	const barW, gap, height = 18, 4, 80
	width := SpendDays * (barW + gap)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg role="img" aria-label="tokens per day and role, last %d days" width="%d" height="%d" viewBox="0 0 %d %d">`,
		SpendDays, width, height+14, width, height+14)
	for i, d := range s.Days {
		x, y := i*(barW+gap), height
		for _, r := range d.Roles {
			h := 0
			if peak > 0 {
				h = int(r.Tokens * height / peak)
			}
			if h == 0 && r.Tokens > 0 {
				h = 1
			}
			y -= h
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s %s: %s tokens, $%.2f, %d runs</title></rect>`,
				x, y, barW, h, colour[r.Role], html.EscapeString(d.Day), html.EscapeString(r.Role), tokens(r.Tokens), r.CostUSD, r.Runs)
		}
		if i == 0 || i == SpendDays-1 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="9">%s</text>`, x, height+12, html.EscapeString(d.Day[5:]))
		}
	}
	b.WriteString(`</svg><p class="meta">`)
	for _, r := range roles {
		fmt.Fprintf(&b, `<span style="color:%s">&#9632;</span> %s %s tokens, $%.2f &nbsp; `, colour[r.Role], html.EscapeString(r.Role), tokens(r.Tokens), r.CostUSD)
	}
	if s.Merged > 0 {
		fmt.Fprintf(&b, `per merged pull request: $%.2f, %s tokens (%d merged)`, s.PerMergedUSD, tokens(s.PerMergedTokens), s.Merged)
	}
	b.WriteString(`</p>`)
	return template.HTML(b.String()) //nolint:gosec // built above from escaped values
}

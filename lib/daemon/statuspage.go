package daemon

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/ledger"
)

// The status page: what /status says, for people. It is rendered on the
// server from the same report, masked the same way, and refreshes itself;
// it needs no script.

//go:embed statuspage.html
var statusPageHTML string

// statusPageRefresh is how often the page reloads itself.
const statusPageRefresh = 30 * time.Second

var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"stamp": stamp,
	"when":  when,
	"ago":   func(now, t time.Time) string { return age(now, t) },
	"attempts": func(it agent.Item) string {
		return attempts(it)
	},
	"cost":    func(v float64) string { return fmt.Sprintf("$%.2f", v) },
	"cadence": cadence,
	"round":   func(d time.Duration) string { return d.Round(time.Second).String() },
	"short":   func(s string, n int) string { return oneLine(s, n) },
}).Parse(statusPageHTML))

// when is a short local time for a table: the time of day today, else
// the date too; "-" for none.
func when(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	t = t.Local()
	if y, m, d := now.Local().Date(); t.Year() == y && t.Month() == m && t.Day() == d {
		return t.Format("15:04:05")
	}
	return t.Format("Jan 2 15:04")
}

// pageView is what the template renders.
type pageView struct {
	Report
	Now     time.Time
	Refresh int
	// Links are the forge links of issues and pull requests, by
	// project.
	links map[string]string
}

// IssueURL links issue n of project p on the forge, "" when unknown.
func (v pageView) IssueURL(p string, n int64) string {
	if base := v.links[p]; base != "" && n > 0 {
		return fmt.Sprintf("%s/issues/%d", base, n)
	}
	return ""
}

// PullURL links pull request n of project p on the forge.
func (v pageView) PullURL(p string, n int64) string {
	if base := v.links[p]; base != "" && n > 0 {
		return fmt.Sprintf("%s/pulls/%d", base, n)
	}
	return ""
}

// Failed reports whether a run's outcome is a failure.
func (pageView) Failed(r ledger.Record) bool { return r.Reason.Failure() }

// Recent lists the recent runs newest first.
func (v pageView) RecentFirst() []ledger.Record {
	out := make([]ledger.Record, 0, len(v.Recent))
	for i := len(v.Recent) - 1; i >= 0; i-- {
		out = append(out, v.Recent[i])
	}
	return out
}

// serveStatusPage answers GET / on the status listener.
func (d *Daemon) serveStatusPage(w http.ResponseWriter, _ *http.Request) {
	page, err := renderStatusPage(d.Status(), d.Redactor.String, time.Now())
	if err != nil {
		d.log.Error().Err(err).Msg("render the status page")
		http.Error(w, "status unavailable", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(page)
}

// renderStatusPage renders rep, masked with mask before and after: the
// report as data (so that escaping cannot hide a secret from the mask)
// and the page as bytes.
func renderStatusPage(rep Report, mask func(string) string, now time.Time) ([]byte, error) {
	raw, err := json.Marshal(rep)
	if err != nil {
		return nil, err
	}
	var masked Report
	if err := json.Unmarshal([]byte(mask(string(raw))), &masked); err != nil {
		return nil, fmt.Errorf("masking secrets broke the report: %w", err)
	}
	v := pageView{Report: masked, Now: now, Refresh: int(statusPageRefresh / time.Second), links: map[string]string{}}
	for _, p := range masked.Projects {
		if strings.HasPrefix(p.URL, "http://") || strings.HasPrefix(p.URL, "https://") {
			v.links[p.Name] = p.URL
		}
	}
	var b bytes.Buffer
	if err := statusPage.Execute(&b, v); err != nil {
		return nil, err
	}
	return []byte(mask(b.String())), nil
}

// stamp is how status shows a time: local, to the second; "-" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

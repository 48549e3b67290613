package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/scheduler"
)

// TestStatusPageRenders: the page shows the report's projects, agents,
// work in flight with forge links, and recent runs; secrets are masked
// and untrusted text is escaped.
func TestStatusPageRenders(t *testing.T) {
	now := time.Now()
	secret := "tok-0123456789abcdef"
	rep := Report{
		Projects: []ProjectInfo{{Name: "alpha", Repo: "acme/alpha", URL: "http://forge.test/acme/alpha"}},
		Jobs:     []scheduler.JobStatus{{Project: "alpha", Role: "dev", Interval: 5 * time.Minute, JobState: scheduler.JobState{LastError: "boom <script>alert(1)</script> " + secret}}},
		InFlight: []agent.Item{{Project: "alpha", Role: "dev", Issue: 7, PR: 8, Stage: "awaiting_review", Started: now.Add(-time.Hour),
			Attempts: map[string]int{"ci": 1}, Limits: map[string]int{"ci": 3}}},
		Recent: []ledger.Record{{End: now, Project: "alpha", Role: "dev", Issue: 5, PR: 6, Reason: ledger.ReasonBlocked,
			Code: "ci.exhausted", CostUSD: 1.5, Wall: 90 * time.Second}},
		Unimplemented: []string{"gardener"},
		CostTodayUSD:  1.5,
	}
	rep.Jobs = append(rep.Jobs, scheduler.JobStatus{Project: "alpha", Role: "planner", Schedule: "0 2 * * *"})
	rep.Findings = []agent.Finding{{Project: "alpha", Rule: "disk", Severity: "warn", Summary: "disk of the data dir 91% full", Incident: 12, Seen: now}}
	rep.Actions = []agent.Action{{Project: "alpha", Rule: "disk", What: "pruned 3 dangling images", At: now}}
	page, err := renderStatusPage(rep, redact.New(secret).String, now)
	if err != nil {
		t.Fatal(err)
	}
	out := string(page)
	for _, want := range []string{`<a href="http://forge.test/acme/alpha/issues/7">#7</a>`, `<a href="http://forge.test/acme/alpha/pulls/8">#8</a>`,
		"awaiting_review", "ci 1/3", `<a href="http://forge.test/acme/alpha/pulls/6">PR #6</a>`, "ci.exhausted", "$1.50", "1m30s",
		"gardener", `http-equiv="refresh"`, "width=device-width", "every 5m", "0 2 * * *",
		"disk of the data dir 91% full", `<a href="http://forge.test/acme/alpha/issues/12">incident #12</a>`, "pruned 3 dangling images"} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(out, secret) {
		t.Error("page shows the secret")
	}
	if strings.Contains(out, "<script>") || !strings.Contains(out, "boom &lt;script&gt;") {
		t.Error("an error's text is not escaped")
	}
}

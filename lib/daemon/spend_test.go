package daemon

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/redact"
)

// TestSpend: the ledger's runs of the window, per day and role, and per
// merged pull request, in status, in its JSON and as the page's chart.
func TestSpend(t *testing.T) {
	loc := time.FixedZone("here", 2*3600)
	first := time.Date(2026, 11, 19, 0, 0, 0, 0, loc)
	at := func(day int, hour int) time.Time {
		return first.AddDate(0, 0, day).Add(time.Duration(hour) * time.Hour)
	}
	recs := []ledger.Record{
		{End: at(0, 1), Project: "p", Role: "dev", Reason: ledger.ReasonMerged, InputTokens: 1000, OutputTokens: 200, CostUSD: 1.5},
		{End: at(0, 2), Project: "p", Role: "review", Reason: ledger.ReasonReviewed, InputTokens: 500, OutputTokens: 50, CostUSD: 0.5},
		{End: at(13, 23), Project: "p", Role: "dev", Reason: ledger.ReasonMerged, InputTokens: 3000, OutputTokens: 250, CostUSD: 2},
		{End: at(13, 23), Project: "p", Role: "dev", Reason: ledger.ReasonBlocked, Code: "ci.exhausted", InputTokens: 50, CostUSD: 0.1},
		{End: at(-1, 12), Project: "p", Role: "dev", InputTokens: 99999, CostUSD: 99}, // before the window
	}
	s := spendOf(recs, first)
	if len(s.Days) != SpendDays || s.Days[0].Day != "2026-11-19" || s.Days[13].Day != "2026-12-02" {
		t.Fatalf("days %+v", s.Days)
	}
	if got := s.Days[13].Roles; len(got) != 1 || got[0] != (RoleSpend{Role: "dev", Runs: 2, Tokens: 3300, CostUSD: 2.1}) {
		t.Errorf("last day %+v", got)
	}
	if s.Merged != 2 || s.PerMergedTokens != 2525 || s.PerMergedUSD < 2.04 || s.PerMergedUSD > 2.06 {
		t.Errorf("per merged: %d, %d tokens, $%.3f", s.Merged, s.PerMergedTokens, s.PerMergedUSD)
	}
	var out bytes.Buffer
	Report{Spend: s}.WriteText(&out, false)
	for _, want := range []string{"spend, last 14 days: dev 4.5k tokens $3.60 (3 runs); review 550 tokens $0.50 (1 runs)",
		"per merged pull request: $2.05, 2.5k tokens (2 merged)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	page, err := renderStatusPage(Report{Spend: s}, redact.New().String, first)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<section id="spend">`, "<svg", "2026-12-02 dev: 3.3k tokens, $2.10, 2 runs", "per merged pull request"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if empty := spendOf(nil, first); empty.Chart() != "" || len(empty.Days) != SpendDays {
		t.Errorf("an empty window: %+v", empty)
	}
}

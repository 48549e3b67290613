package planner

import (
	"testing"
	"time"
)

// BenchmarkUnchangedRun measures a planner run on a project where nothing
// changed since the last run (which filed, labelled and committed the
// tree: its own changes are no news): it must ask the model nothing and
// cost at most five forge requests (reported per run).
func BenchmarkUnchangedRun(b *testing.B) {
	r := newRig(b, nil, nil)
	r.script(Plan{Tree: launchTree(Prereq{Text: "Metrics wired", Ref: "m"}), Issues: []Proposal{backlog("m", "Wire the metrics")},
		Priority: []IssueRef{{Ref: "m"}}})
	r.mustTick()
	if len(r.openByBot()) != 1 {
		b.Fatal("the first run filed nothing")
	}
	models := r.Sessions()
	r.Proxy.Reset()
	runs := 0
	for b.Loop() {
		r.Now = r.Now.Add(12 * time.Hour)
		r.mustTick()
		runs++
	}
	b.ReportMetric(float64(r.Proxy.Total())/float64(runs), "forge-requests/run")
	b.ReportMetric(float64(r.Sessions()-models)/float64(runs), "model-requests/run")
	if got := float64(r.Proxy.Total()) / float64(runs); got > 5 {
		b.Errorf("%.1f forge requests per unchanged run (%v)", got, r.Proxy.Counts())
	}
	if r.Sessions() != models {
		b.Errorf("%d model requests on unchanged runs", r.Sessions()-models)
	}
}

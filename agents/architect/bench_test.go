package architect

import "testing"

// BenchmarkUnchangedRun measures an architect run on a project where
// nothing changed since the last run: one sprint awaiting its decision
// and no vision left to pitch. It must ask the model nothing and cost at
// most five forge requests (the primary branch, the issues updated since,
// the open ops pull requests, and the comments and reviews of the one
// open sprint), reported per run.
func BenchmarkUnchangedRun(b *testing.B) {
	r := newRig(b)
	r.pitched("Add billing")
	r.mustTick() // sees its own writes
	models := r.sessions()
	r.proxy.Reset()
	runs := 0
	for b.Loop() {
		r.mustTick()
		runs++
	}
	b.ReportMetric(float64(r.proxy.Total())/float64(runs), "forge-requests/run")
	b.ReportMetric(float64(r.sessions()-models)/float64(runs), "model-requests/run")
	if got := float64(r.proxy.Total()) / float64(runs); got > 5 {
		b.Errorf("%.1f forge requests per unchanged run (%v)", got, r.proxy.Counts())
	}
	if r.sessions() != models {
		b.Errorf("%d model requests on unchanged runs", r.sessions()-models)
	}
}

package predictor

import "testing"

// BenchmarkUnchangedRun measures a predictor run on a project where
// nothing changed since a run that filed nothing: it must ask the model
// nothing and cost at most five forge requests (reported per run).
func BenchmarkUnchangedRun(b *testing.B) {
	r := newRig(b, nil)
	r.scriptRaw(`{"proposals": [], "skipped": "nothing weak enough"}`)
	r.mustTick()
	if len(r.ByBot()) != 0 {
		b.Fatal("the first run filed")
	}
	models := r.Sessions()
	r.Proxy.Reset()
	runs := 0
	for b.Loop() {
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

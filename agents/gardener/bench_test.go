package gardener

import (
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// BenchmarkUnchangedRun measures a gardener run on a project where
// nothing changed since the last run: it must ask the model nothing and
// cost at most four forge requests (reported per run).
func BenchmarkUnchangedRun(b *testing.B) {
	r := newRig(b, map[string]string{"docs/notes.md": "hello\n"})
	r.Issue("well formed", "Fix it.\n\n## Acceptance criteria\n\n- [ ] it works\n\n## Affected files\n\n- `docs/notes.md`\n", forge.LabelBacklog)
	r.mustTick()
	if r.pullCount() != 0 {
		b.Fatal("the project is not clean")
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
	if got := float64(r.Proxy.Total()) / float64(runs); got > 4 {
		b.Errorf("%.1f forge requests per unchanged run (%v)", got, r.Proxy.Counts())
	}
	if r.Sessions() != models {
		b.Errorf("%d model requests on unchanged runs", r.Sessions()-models)
	}
}

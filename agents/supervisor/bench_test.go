package supervisor

import (
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

// BenchmarkQuietRun measures a run in which no rule fires, against the
// real forge through a counting proxy: wall time and forge requests per
// run, and that no model request is made.
func BenchmarkQuietRun(b *testing.B) {
	s := gitea.Get(b)
	fp := s.NewProject(b, "bench")
	proxy := forgetest.NewProxy(b, s.URL)
	c, err := forge.New(forge.Options{URL: proxy.URL, Token: fp.Owner.Token})
	if err != nil {
		b.Fatal(err)
	}
	clk := &clock{t: time.Now()}
	data := b.TempDir()
	an := &countingAnalyst{}
	a, err := New(Options{Project: benchProject(), Forge: c.Repo(fp.Repo.Owner(), fp.Repo.Name()), Host: healthyHost(), Analyst: an,
		DataDir: data, StateDir: data + "/state", Now: clk.now})
	if err != nil {
		b.Fatal(err)
	}
	proxy.Reset()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := a.RunOnce(ctxT(b), ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/run")
	b.ReportMetric(float64(proxy.Total())/float64(b.N), "forge-requests/run")
	b.ReportMetric(float64(an.n)/float64(b.N), "model-requests/run")
	if an.n != 0 {
		b.Fatalf("quiet runs asked the model %d times", an.n)
	}
}

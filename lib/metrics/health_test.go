package metrics_test

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/disinto/disinto/lib/metrics"
)

// scrape serves /metrics once and parses the exposition.
func scrape(t *testing.T, reg *metrics.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	w := httptest.NewRecorder()
	reg.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(w.Body)
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	return fams
}

// sample finds the value of family name with exactly labels, and reports
// whether there is one.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	fam, ok := fams[name]
	if !ok {
		return 0, false
	}
	for _, m := range fam.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		if m.GetGauge() != nil {
			return m.GetGauge().GetValue(), true
		}
		return m.GetCounter().GetValue(), true
	}
	return 0, false
}

func TestHealthMetrics(t *testing.T) {
	reg := metrics.New(nil)
	reg.SetBuildInfo("v1.2.3", "abc123")
	reg.SetForgeUp("widgets", true)
	reg.SetForgeUp("gadgets", false)
	before := time.Now()
	reg.ObserveTick("widgets", "dev", time.Second, nil)
	after := time.Now()
	reg.ObserveTick("widgets", "review", time.Second, errors.New("forge down"))
	reg.SetFindings([]metrics.Finding{{Rule: "agent-stalled", Severity: "P2", Count: 1}, {Rule: "disk", Severity: "P1", Count: 2}})

	fams := scrape(t, reg)
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"disinto_build_info", map[string]string{"version": "v1.2.3", "commit": "abc123"}, 1},
		{"disinto_forge_up", map[string]string{"project": "widgets"}, 1},
		{"disinto_forge_up", map[string]string{"project": "gadgets"}, 0},
		{"disinto_supervisor_findings", map[string]string{"rule": "agent-stalled", "severity": "P2"}, 1},
		{"disinto_supervisor_findings", map[string]string{"rule": "disk", "severity": "P1"}, 2},
	}
	for _, c := range checks {
		if got, ok := sample(fams, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	ts, ok := sample(fams, "disinto_job_last_success_timestamp_seconds", map[string]string{"project": "widgets", "role": "dev"})
	if !ok || ts < float64(before.Unix()) || ts > float64(after.Unix()+1) {
		t.Errorf("dev last success = %v (present %v), want between %v and %v", ts, ok, before.Unix(), after.Unix())
	}
	if _, ok := sample(fams, "disinto_job_last_success_timestamp_seconds", map[string]string{"project": "widgets", "role": "review"}); ok {
		t.Error("a failed tick stamped a last success")
	}

	// The next supervisor run replaces the findings: disk is fixed.
	reg.SetFindings([]metrics.Finding{{Rule: "agent-stalled", Severity: "P2", Count: 3}})
	fams = scrape(t, reg)
	if _, ok := sample(fams, "disinto_supervisor_findings", map[string]string{"rule": "disk", "severity": "P1"}); ok {
		t.Error("a finding of the previous run is still exposed")
	}
	if got, _ := sample(fams, "disinto_supervisor_findings", map[string]string{"rule": "agent-stalled", "severity": "P2"}); got != 3 {
		t.Errorf("agent-stalled = %v, want 3", got)
	}
	// A new build label replaces the old one.
	reg.SetBuildInfo("v1.2.4", "")
	fams = scrape(t, reg)
	if n := len(fams["disinto_build_info"].GetMetric()); n != 1 {
		t.Errorf("%d build_info series, want 1", n)
	}
	if got, ok := sample(fams, "disinto_build_info", map[string]string{"version": "v1.2.4", "commit": "unknown"}); !ok || got != 1 {
		t.Errorf("build_info without commit = %v, %v", got, ok)
	}
}

package daemon

import (
	"testing"
	"time"

	"github.com/disinto/disinto/lib/scheduler"
)

// TestCadenceReadsIntervals: the cadence column shows every interval whole,
// without the zero units Go's Duration.String adds.
func TestCadenceReadsIntervals(t *testing.T) {
	tests := []struct {
		name string
		job  scheduler.JobStatus
		want string
	}{
		{"unknown", scheduler.JobStatus{}, "-"},
		{"cron", scheduler.JobStatus{Schedule: "0 2 * * *", Interval: time.Hour}, "0 2 * * *"},
		{"seconds", scheduler.JobStatus{Interval: 30 * time.Second}, "every 30s"},
		{"one minute", scheduler.JobStatus{Interval: time.Minute}, "every 1m"},
		{"two minutes", scheduler.JobStatus{Interval: 2 * time.Minute}, "every 2m"},
		{"ten minutes", scheduler.JobStatus{Interval: 10 * time.Minute}, "every 10m"},
		{"twenty minutes", scheduler.JobStatus{Interval: 20 * time.Minute}, "every 20m"},
		{"ninety seconds", scheduler.JobStatus{Interval: 90 * time.Second}, "every 1m30s"},
		{"one hour", scheduler.JobStatus{Interval: time.Hour}, "every 1h"},
		{"ten hours", scheduler.JobStatus{Interval: 10 * time.Hour}, "every 10h"},
		{"hour and a half", scheduler.JobStatus{Interval: 90 * time.Minute}, "every 1h30m"},
		{"hour, minute, second", scheduler.JobStatus{Interval: time.Hour + time.Minute + time.Second}, "every 1h1m1s"},
		{"sub-second rounds", scheduler.JobStatus{Interval: 1500 * time.Millisecond}, "every 2s"},
		{"below a second", scheduler.JobStatus{Interval: 200 * time.Millisecond}, "every 200ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cadence(tt.job); got != tt.want {
				t.Errorf("cadence(%v) = %q, want %q", tt.job.Interval, got, tt.want)
			}
		})
	}
}

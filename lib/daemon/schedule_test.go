package daemon

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/scheduler"
)

// TestJobForSchedule: a role with a cron schedule becomes a scheduled job
// (the supervisor's after-finish cadence gives way to it), one without
// keeps its interval; status shows either, with the next run.
func TestJobForSchedule(t *testing.T) {
	sch, err := config.ParseSchedule("0 2 * * *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	p := &config.Project{Name: "widgets", Roles: map[config.Role]config.RoleSettings{
		config.RoleSupervisor: {Enabled: true, Interval: 20 * time.Minute, Schedule: sch},
		config.RolePlanner:    {Enabled: true, Interval: 12 * time.Hour},
	}}
	rt := agent.New(agent.Options{Log: zerolog.Nop()})
	sup := jobFor(rt, failTick{}, p, specOf(t, config.RoleSupervisor), nil)
	if sup.Schedule == nil || sup.Schedule.String() != "0 2 * * *" {
		t.Fatalf("supervisor job schedule = %v", sup.Schedule)
	}
	planner := jobFor(rt, failTick{}, p, specOf(t, config.RolePlanner), nil)
	if planner.Schedule != nil || planner.Interval != 12*time.Hour {
		t.Fatalf("planner job = %+v", planner)
	}

	next := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	Report{Jobs: []scheduler.JobStatus{
		{Project: "widgets", Role: "supervisor", Schedule: sup.Schedule.String(), Next: next},
		{Project: "widgets", Role: "planner", Interval: planner.Interval},
	}}.WriteText(&out, false)
	lines := strings.Split(out.String(), "\n")
	find := func(role string) string {
		for _, l := range lines {
			if strings.Contains(l, " "+role+" ") {
				return l
			}
		}
		t.Fatalf("no %s line in:\n%s", role, out.String())
		return ""
	}
	if l := find("supervisor"); !strings.Contains(l, "0 2 * * *") || !strings.Contains(l, stamp(next)) {
		t.Errorf("supervisor line lacks its schedule and next run: %q", l)
	}
	if l := find("planner"); !strings.Contains(l, "every 12h") {
		t.Errorf("planner line lacks its interval: %q", l)
	}
}

// specOf is role's row of the role table.
func specOf(t *testing.T, role config.Role) config.RoleSpec {
	t.Helper()
	s, ok := config.SpecOf(role)
	if !ok {
		t.Fatalf("no row for role %s", role)
	}
	return s
}

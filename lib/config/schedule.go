package config

import (
	"fmt"
	"strings"
	"time"
	// Time zones resolve the same in every image, with or without the
	// system's zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// cronParser is the standard five-field parser (minute, hour, day of
// month, month, day of week) with the descriptors @yearly, @monthly,
// @weekly, @daily, @hourly and @every <duration>.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Schedule is a role's cron schedule ([roles.<role>] schedule = "0 2 * * *").
// Its time zone is, from strongest to weakest: a CRON_TZ= (or TZ=) prefix of
// the expression, the project's timezone key, the TZ environment variable,
// UTC. It implements scheduler.Schedule.
type Schedule struct {
	// Expr is the expression as written.
	Expr string
	// Location is the time zone the expression is read in.
	Location *time.Location
	sched    cron.Schedule
}

// ParseSchedule parses expr, reading it in loc (UTC when nil) unless it
// names its own zone with a CRON_TZ= or TZ= prefix. An expression that
// never fires (30 February) is an error.
func ParseSchedule(expr string, loc *time.Location) (*Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, fmt.Errorf("empty schedule")
	}
	parsed, err := cronParser.Parse(expr)
	if err != nil {
		return nil, err
	}
	s := &Schedule{Expr: expr, Location: loc, sched: parsed}
	if spec, ok := parsed.(*cron.SpecSchedule); ok {
		if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
			s.Location = spec.Location
		} else {
			// The parser's default is the process's local zone, which
			// differs between a host and its container: never use it.
			spec.Location = loc
		}
	}
	if s.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("%q never fires", expr)
	}
	return s, nil
}

// Next returns the first activation strictly after t (in t's location),
// or the zero time when there is none within five years.
func (s *Schedule) Next(t time.Time) time.Time {
	n := s.sched.Next(t)
	if n.IsZero() {
		return n
	}
	return n.In(t.Location())
}

// String returns the expression, with its zone when that is not UTC.
func (s *Schedule) String() string {
	if s.Location == nil || s.Location == time.UTC || strings.Contains(s.Expr, "TZ=") || strings.HasPrefix(s.Expr, "@every") {
		return s.Expr
	}
	return s.Expr + " (" + s.Location.String() + ")"
}

// scheduleZone resolves the zone of a project's schedules: its timezone
// key, else the TZ environment variable, else UTC. It reports the key a
// bad name came from.
func scheduleZone(timezone string, env Env) (*time.Location, string, error) {
	name, key := timezone, "timezone"
	if name == "" {
		name, key = strings.TrimPrefix(env.Get("TZ"), ":"), "TZ"
	}
	if name == "" {
		return time.UTC, "", nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, key, fmt.Errorf("%q is not a known time zone", name)
	}
	return loc, key, nil
}

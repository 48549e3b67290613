package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/config"
)

func TestRoleSchedule(t *testing.T) {
	files := map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\ntimezone = \"Europe/Berlin\"\n" +
		"[roles.planner]\nschedule = \"0 2 * * *\"\n" +
		"[roles.predictor]\nschedule = \"@every 6h\"\n" +
		"[roles.gardener]\nschedule = \"CRON_TZ=America/New_York 30 4 * * 1\"\n"}
	cfg, err := parse(t, nil, files)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Projects[0]
	planner := p.Roles[config.RolePlanner].Schedule
	if planner == nil || planner.Expr != "0 2 * * *" || planner.Location.String() != "Europe/Berlin" {
		t.Fatalf("planner schedule = %+v", planner)
	}
	// 02:00 in Berlin in winter is 01:00 UTC.
	from := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	if got, want := planner.Next(from), time.Date(2026, 1, 11, 1, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("planner next = %v, want %v", got, want)
	}
	if got := p.Roles[config.RolePredictor].Schedule.Next(from); !got.Equal(from.Add(6 * time.Hour)) {
		t.Errorf("@every 6h next = %v", got)
	}
	gardener := p.Roles[config.RoleGardener].Schedule
	if gardener.Location.String() != "America/New_York" {
		t.Errorf("CRON_TZ prefix ignored: %v", gardener.Location)
	}
	if got, want := gardener.Next(from), time.Date(2026, 1, 12, 9, 30, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("gardener next = %v, want %v", got, want)
	}
	if p.Roles[config.RoleDev].Schedule != nil {
		t.Error("dev has a schedule it was not given")
	}
}

func TestScheduleZoneDefaults(t *testing.T) {
	files := map[string]string{"a.toml": "name = \"a\"\nrepo = \"o/a\"\n[roles.planner]\nschedule = \"0 2 * * *\"\n"}
	from := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		env  map[string]string
		want time.Time
	}{
		{"UTC without TZ", nil, time.Date(2026, 7, 2, 2, 0, 0, 0, time.UTC)},
		// 02:00 in Tokyo is 17:00 UTC the day before.
		{"TZ", map[string]string{"TZ": "Asia/Tokyo"}, time.Date(2026, 7, 1, 17, 0, 0, 0, time.UTC)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parse(t, tt.env, files)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Projects[0].Roles[config.RolePlanner].Schedule.Next(from); !got.Equal(tt.want) {
				t.Errorf("next = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScheduleProblems(t *testing.T) {
	ok := "name = \"a\"\nrepo = \"o/a\"\n"
	for _, tt := range []struct {
		name string
		file string
		env  map[string]string
		want string
	}{
		{"bad expression", ok + "[roles.planner]\nschedule = \"0 25 * * *\"\n", nil,
			`a.toml:4: roles.planner.schedule: "0 25 * * *" is not a cron schedule: `},
		{"too few fields", ok + "[roles.dev]\nenabled = true\nschedule = \"*/5 *\"\n", nil,
			`a.toml:5: roles.dev.schedule: "*/5 *" is not a cron schedule: `},
		{"never fires", ok + "[roles.planner]\nschedule = \"0 0 30 2 *\"\n", nil,
			`a.toml:4: roles.planner.schedule: "0 0 30 2 *" is not a cron schedule: "0 0 30 2 *" never fires`},
		{"interval and schedule", ok + "[roles.planner]\ninterval = \"12h\"\nschedule = \"@daily\"\n", nil,
			"a.toml:5: roles.planner.schedule: set either interval or schedule, not both"},
		{"bad timezone", ok + "timezone = \"Mars/Olympus\"\n[roles.planner]\nschedule = \"@daily\"\n", nil,
			`a.toml:3: timezone: "Mars/Olympus" is not a known time zone`},
		{"bad TZ", ok + "[roles.planner]\nschedule = \"@daily\"\n", map[string]string{"TZ": "Nowhere/Else"},
			`a.toml:4: roles.planner.schedule: environment variable TZ: "Nowhere/Else" is not a known time zone`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.env, map[string]string{"a.toml": tt.file})
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			if lines := strings.Split(err.Error(), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], tt.want) {
				t.Errorf("error = %q, want one line starting %q", err, tt.want)
			}
		})
	}
}

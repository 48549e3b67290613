package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/disinto/disinto/agents/architect"
	"github.com/disinto/disinto/agents/supervisor"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/daemon"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/scheduler"
)

func (a *app) statusCmd() *cobra.Command {
	var asJSON bool
	var remote string
	cmd := &cobra.Command{
		Use:     "status [--json] [--url URL]",
		Short:   "Show projects, agents (enabled, last and next run, running now), recent runs and cost today",
		Example: "  disinto status\n  disinto status --json\n  disinto status --url http://agents.example.org:8080",
		Long: "Reads the running daemon's /status when there is one (found through <data>/daemon.json),\n" +
			"otherwise the data dir: schedule, pauses and the run ledger. With --url, reads the /status\n" +
			"of the daemon whose status listener is at that URL (another machine, or one replica), with\n" +
			"DISINTO_STATUS_TOKEN; a daemon that does not answer there is an error, not an offline view.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if remote != "" {
				rep, err := daemon.FetchStatusFrom(cmd.Context(), remote, a.statusToken(), http.DefaultClient)
				if err != nil {
					return err
				}
				if asJSON {
					return writeStatusJSON(a.stdout, rep)
				}
				rep.WriteText(a.stdout, true)
				return nil
			}
			rep, err := a.fetchStatus(cmd.Context())
			live := err == nil
			if errors.Is(err, daemon.ErrNotRunning) {
				rep, err = a.offlineStatus()
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeStatusJSON(a.stdout, rep)
			}
			rep.WriteText(a.stdout, live)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	a.envFlag(cmd.Flags(), &remote, "url", "DISINTO_STATUS_URL", "", "read the /status of the daemon whose status listener is at this URL")
	return cmd
}

// fetchStatus asks a running daemon for its /status, on the status
// listener daemon.json names, with DISINTO_STATUS_TOKEN (env file or
// environment) when one is set; daemon.ErrNotRunning when none runs.
func (a *app) fetchStatus(ctx context.Context) (daemon.Report, error) {
	return daemon.FetchStatus(ctx, a.dataDir, a.statusToken(), http.DefaultClient)
}

// statusToken is DISINTO_STATUS_TOKEN from the env file or the
// environment; empty when neither sets it.
func (a *app) statusToken() string {
	if env, err := config.LoadEnvWith(a.envFile, a.envDecrypter(), a.env); err == nil {
		return env.Get(daemon.EnvStatusToken)
	}
	return ""
}

// offlineStatus builds the report from the config and the data dir while
// no daemon runs. A config that does not load fails it, in one line:
// without one the tables would be empty, which reads as "nothing to do".
func (a *app) offlineStatus() (daemon.Report, error) {
	var rep daemon.Report
	cadences := map[string]config.RoleSettings{} // by project/role
	cfg, err := a.loadConfigQuiet()
	if err != nil {
		return rep, fmt.Errorf("no daemon runs and the configuration does not load: %s", firstProblem(err))
	}
	cfg, rep.Replica = daemon.OwnedConfig(cfg)
	for _, p := range cfg.Projects {
		rep.Projects = append(rep.Projects, daemon.ProjectInfo{Name: p.Name, Repo: p.Repo})
		sup := supervisor.LastReport(a.layout().RoleState(p.Name, config.RoleSupervisor), p.Name)
		rep.Findings, rep.Actions = append(rep.Findings, sup.Findings...), append(rep.Actions, sup.Actions...)
		rep.InFlight = append(rep.InFlight, architectHoldings(a.dataDir, p)...)
		// Every role the table runs for the project, companions too.
		for _, spec := range config.RoleSpecs() {
			if cfg.RoleRuns(p, spec) {
				var rs config.RoleSettings
				rs.Interval, rs.Schedule = p.Cadence(spec)
				cadences[p.Name+"/"+string(spec.Name)] = rs
			}
		}
	}
	if store, err := scheduler.OpenStore(a.layout().Schedule()); err == nil {
		for key, st := range store.All() {
			p, r, _ := strings.Cut(key, "/")
			js := scheduler.JobStatus{Project: p, Role: r, JobState: st}
			if rs, ok := cadences[key]; ok {
				js.Interval = rs.Interval
				if rs.Schedule != nil {
					js.Schedule = rs.Schedule.String()
				}
			}
			rep.Jobs = append(rep.Jobs, js)
		}
		sort.Slice(rep.Jobs, func(i, j int) bool {
			return rep.Jobs[i].Project+"/"+rep.Jobs[i].Role < rep.Jobs[j].Project+"/"+rep.Jobs[j].Role
		})
	}
	rep.Paused, _ = daemon.OpenEnablement(a.layout()).List()
	rep.Recent, rep.CostTodayUSD = daemon.RecentRuns(a.dataDir, time.Now())
	rep.Spend = daemon.Spending(a.dataDir, time.Now())
	rep.TrackRecords = daemon.TrackRecords(a.dataDir, cfg)
	return rep, nil
}

// firstProblem is a config error on one line: its first problem, and
// where to see the others.
func firstProblem(err error) string {
	var ps config.Problems
	if !errors.As(err, &ps) || len(ps) == 0 {
		return err.Error()
	}
	if len(ps) == 1 {
		return ps[0].Error() + " (disinto config check)"
	}
	return fmt.Sprintf("%s, and %d more (disinto config check lists them)", ps[0].Error(), len(ps)-1)
}

func (a *app) loadConfigQuiet() (*config.Config, error) {
	return config.LoadWith(a.projectsDir, a.envFile, a.env, a.envDecrypter())
}

// writeStatusJSON prints the report as `disinto status --json` shows it to
// people and scripts: every list is a list ([] rather than null), and every
// duration is in seconds (a field "x_seconds" where the daemon's wire and
// the ledger carry "x_ns").
func writeStatusJSON(w io.Writer, rep daemon.Report) error {
	fillNilSlices(reflect.ValueOf(&rep).Elem())
	raw, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(inSeconds(tree))
}

// fillNilSlices replaces every nil slice reachable from v (through
// structs, pointers, slices and maps of them) by an empty one.
func fillNilSlices(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			fillNilSlices(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() || f.Kind() == reflect.Struct {
				fillNilSlices(f)
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			if v.CanSet() {
				v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			}
			return
		}
		for i := range v.Len() {
			fillNilSlices(v.Index(i))
		}
	case reflect.Map:
		// Map values are not addressable; the status has no lists in maps.
	}
}

// inSeconds renames each "x_ns" number of a decoded JSON tree to
// "x_seconds", its value divided by 1e9.
func inSeconds(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if n, ok := val.(json.Number); ok && strings.HasSuffix(k, "_ns") {
				if ns, err := n.Int64(); err == nil {
					out[strings.TrimSuffix(k, "_ns")+"_seconds"] = float64(ns) / 1e9
					continue
				}
			}
			out[k] = inSeconds(val)
		}
		return out
	case []any:
		for i := range x {
			x[i] = inSeconds(x[i])
		}
		return x
	}
	return v
}

// architectHoldings are the open sprints of p's architect with their
// stages, read from the data dir for a status taken while no daemon runs
// (a running daemon's architect reports them live).
func architectHoldings(dataDir string, p *config.Project) []agent.Item {
	return architect.LastReport(datadir.New(dataDir).RoleState(p.Name, config.RoleArchitect), p.Name).Items
}

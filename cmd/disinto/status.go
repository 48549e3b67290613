package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
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
	cmd := &cobra.Command{
		Use:     "status [--json]",
		Short:   "Show projects, agents (enabled, last and next run, running now), recent runs and cost today",
		Example: "  disinto status\n  disinto status --json",
		Long: "Reads the running daemon's /status when there is one (found through <data>/daemon.json),\n" +
			"otherwise the data dir: schedule, pauses and the run ledger.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, live := a.fetchStatus(cmd.Context())
			if !live {
				rep = a.offlineStatus()
			}
			if asJSON {
				return writeStatusJSON(a.stdout, rep)
			}
			rep.WriteText(a.stdout, live)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// fetchStatus asks a running daemon for its /status, on the status
// listener daemon.json names, with DISINTO_STATUS_TOKEN (env file or
// environment) when one is set.
func (a *app) fetchStatus(ctx context.Context) (daemon.Report, bool) {
	info, ok := daemon.ReadInfo(a.dataDir)
	if !ok {
		return daemon.Report{}, false
	}
	addr := info.Status
	if addr == "" {
		addr = info.Listen
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return daemon.Report{}, false
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/status", nil)
	if err != nil {
		return daemon.Report{}, false
	}
	if env, err := config.LoadEnvWith(a.envFile, a.envDecrypter(), a.env); err == nil && env.Get(daemon.EnvStatusToken) != "" {
		req.Header.Set("Authorization", "Bearer "+env.Get(daemon.EnvStatusToken))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return daemon.Report{}, false
	}
	defer resp.Body.Close()
	var rep daemon.Report
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&rep) != nil {
		return daemon.Report{}, false
	}
	if rep.Daemon != nil {
		rep.Daemon.PID, rep.Daemon.Listen, rep.Daemon.Status = info.PID, info.Listen, info.Status
	}
	return rep, true
}

// offlineStatus builds the report from the data dir (and the config when
// it loads) while no daemon runs.
func (a *app) offlineStatus() daemon.Report {
	var rep daemon.Report
	cadences := map[string]config.RoleSettings{} // by project/role
	if cfg, err := a.loadConfigQuiet(); err == nil {
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
	return rep
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

package daemon

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/scheduler"
	"github.com/disinto/disinto/lib/vault"
)

// WriteText writes the report as `disinto status` shows it; live says it
// comes from a running daemon rather than from the data dir alone.
func (rep Report) WriteText(w io.Writer, live bool) {
	if live && rep.Daemon != nil {
		fmt.Fprintf(w, "daemon: running (pid %d, webhooks on %s, status on %s, up since %s)\n", rep.Daemon.PID,
			rep.Daemon.Listen, orDash(rep.Daemon.Status), rep.Daemon.Started.Format(time.RFC3339))
		switch rep.Sessions {
		case SessionsIsolated:
			fmt.Fprintln(w, "sessions: isolated (each runs under a uid of its own)")
		case SessionsUnisolated:
			fmt.Fprintln(w, "sessions: UNISOLATED: they run as the daemon's user and can read its credentials (--allow-unisolated-sessions)")
		}
		switch rep.Egress {
		case EgressFiltered:
			fmt.Fprintln(w, "network: sessions reach the model gateway and the egress proxy only")
		case EgressUnfiltered:
			fmt.Fprintln(w, "network: UNFILTERED: the egress firewall is not installed and sessions reach whatever the daemon's network does (--allow-unisolated-sessions)")
		}
	} else {
		fmt.Fprintln(w, "daemon: not running")
	}
	if r := rep.Replica; r != nil {
		fmt.Fprintf(w, "replica: slot %d of %d, owns %d of %d projects: %s\n", r.Slot, r.Replicas, len(r.Owned), r.Configured, orDash(strings.Join(r.Owned, ", ")))
	}
	for _, o := range rep.Ops {
		switch {
		case o.Error != "":
			fmt.Fprintf(w, "ops %s (%s): not synced: %s\n", o.Project, o.Repo, oneLine(o.Error, 80))
		default:
			fmt.Fprintf(w, "ops %s (%s): at %.8s, synced %s\n", o.Project, o.Repo, o.Head, stamp(o.Synced))
		}
	}
	printBackends(w, rep.Backends)
	printEdge(w, rep.Edge)
	printMemory(w, rep)
	if len(rep.Projects) > 0 {
		fmt.Fprintln(w, "\nprojects:")
		for _, p := range rep.Projects {
			fmt.Fprintf(w, "  %s  %s\n", p.Name, p.Repo)
		}
	}
	paused := func(project, role string) bool {
		for _, p := range rep.Paused {
			if string(p.Role) == role && (p.Project == "" || p.Project == project) {
				return true
			}
		}
		return false
	}
	running := map[string]int{}
	for _, wk := range rep.Running {
		running[wk.Project+"/"+wk.Role]++
	}
	fmt.Fprintln(w, "\nagents:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PROJECT\tROLE\tENABLED\tCADENCE\tLAST RUN\tNEXT RUN\tRUNNING\tLAST ERROR")
	disabled := map[string]DisabledRole{}
	for _, dr := range rep.Disabled {
		disabled[dr.Project+"/"+dr.Role] = dr
	}
	for _, j := range rep.Jobs {
		run := "-"
		if j.Running || running[j.Project+"/"+j.Role] > 0 {
			run = fmt.Sprintf("yes (%d work)", running[j.Project+"/"+j.Role])
		}
		enabled := yesNo(!paused(j.Project, j.Role))
		if _, ok := disabled[j.Project+"/"+j.Role]; ok {
			enabled = "DISABLED"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.Project, j.Role, enabled, cadence(j),
			stamp(j.LastStart), stamp(j.Next), run, oneLine(j.LastError, 60))
	}
	_ = tw.Flush()
	for _, dr := range rep.Disabled {
		fmt.Fprintf(w, "  %s %s is disabled since %s: %s\n", dr.Project, dr.Role, stamp(dr.Since), dr.Reason)
	}
	for _, f := range rep.Failing {
		fmt.Fprintf(w, "  %s %s has failed %d times in a row since %s (%s)\n", f.Project, f.Role, f.Count, stamp(f.Since), f.Code)
	}
	for _, why := range rep.NotScheduled {
		fmt.Fprintf(w, "  (not scheduled: %s)\n", why)
	}
	if len(rep.Unimplemented) > 0 {
		fmt.Fprintf(w, "  (configured but not implemented yet: %s)\n", strings.Join(rep.Unimplemented, ", "))
	}
	for _, p := range rep.Paused {
		if p.Project == "" {
			fmt.Fprintf(w, "  %s is paused for all projects since %s\n", p.Role, stamp(p.Since))
		}
	}
	printHoldings(w, rep, time.Now())
	printStalled(w, rep.Heartbeats, time.Now())
	printVault(w, rep.Vault)
	fmt.Fprintln(w, "\nrecent runs:")
	if len(rep.Recent) == 0 {
		fmt.Fprintln(w, "  none")
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(rep.Recent) > 0 {
		fmt.Fprintln(tw, "  ENDED\tPROJECT\tROLE\tSUBJECT\tOUTCOME\tCODE\tCOST\tWALL\tSTAGES")
	}
	for _, r := range rep.Recent {
		subject := "-"
		switch {
		case r.PR != 0:
			subject = fmt.Sprintf("PR #%d", r.PR)
		case r.Issue != 0:
			subject = fmt.Sprintf("#%d", r.Issue)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t$%.2f\t%s\t%s\n", stamp(r.End), r.Project, r.Role, subject,
			r.Reason, orDash(string(r.Code)), r.CostUSD, r.Wall.Round(time.Second), stageTimes(r.Stages))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\ncost today: $%.2f\n", rep.CostTodayUSD)
	if rep.Spend != nil {
		rep.Spend.writeText(w)
	}
	writeTrackRecords(w, rep.TrackRecords)
}

// printStalled names the running work whose heartbeat has gone quiet.
func printStalled(w io.Writer, beats []agent.Heartbeat, now time.Time) {
	for _, h := range beats {
		if !h.Stalled {
			continue
		}
		line := fmt.Sprintf("  %s %s %s: STALLED, no progress for %s (last: %s)", h.Project, h.Role, h.Key,
			h.Silent(now).Round(time.Second), h.Step)
		if h.PGID > 0 {
			line += fmt.Sprintf(", session pgid %d until %s", h.PGID, stamp(h.Deadline))
		}
		fmt.Fprintln(w, line)
	}
}

// cadence reads a job's schedule ("0 2 * * *") or interval ("every 5m"),
// or "-" when not known (a status read from the data dir alone).
func cadence(j scheduler.JobStatus) string {
	switch {
	case j.Schedule != "":
		return j.Schedule
	case j.Interval > 0:
		return "every " + interval(j.Interval)
	}
	return "-"
}

// printHoldings lists the work in flight, one line per issue with its
// stage, pull request, attempts and age, and the deferred side effects
// still to be done.
func printHoldings(w io.Writer, rep Report, now time.Time) {
	if len(rep.InFlight) > 0 {
		fmt.Fprintln(w, "\nin flight:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  PROJECT\tROLE\tISSUE\tPR\tSTAGE\tATTEMPTS\tAGE\tWAITING")
		for _, it := range rep.InFlight {
			pr, waiting := "-", "-"
			if it.PR != 0 {
				pr = fmt.Sprintf("#%d", it.PR)
			}
			if !it.Waiting.IsZero() {
				waiting = age(now, it.Waiting)
			}
			fmt.Fprintf(tw, "  %s\t%s\t#%d\t%s\t%s\t%s\t%s\t%s\n", it.Project, it.Role, it.Issue, pr, it.Stage,
				attempts(it), age(now, it.Started), waiting)
		}
		_ = tw.Flush()
		said := false
		for _, it := range rep.InFlight {
			if it.Human == "" {
				continue
			}
			if !said {
				fmt.Fprintln(w, "\nwaiting for a human:")
				said = true
			}
			fmt.Fprintf(w, "  %s #%d: %s\n", it.Project, it.Issue, oneLine(it.Human, 120))
		}
	}
	printSupervision(w, rep)
	for _, p := range rep.Pending {
		line := fmt.Sprintf("  %s %s: %s to %s of %s queued %s", p.Project, p.Role, p.What, p.Target, orDash(p.Detail), stamp(p.Queued))
		if p.Attempts > 0 {
			line += fmt.Sprintf(", failed %d times, next try %s: %s", p.Attempts, stamp(p.Next), oneLine(p.Error, 60))
		}
		fmt.Fprintln(w, line)
	}
}

// printSupervision lists the supervisors' open findings and the actions
// of their last runs.
func printSupervision(w io.Writer, rep Report) {
	if len(rep.Findings) > 0 {
		fmt.Fprintln(w, "\nsupervisor findings:")
		for _, f := range rep.Findings {
			line := fmt.Sprintf("  %s [%s] %s", f.Project, f.Severity, oneLine(f.Summary, 100))
			if f.Incident != 0 {
				line += fmt.Sprintf(" (incident #%d)", f.Incident)
			}
			fmt.Fprintln(w, line)
		}
	}
	if len(rep.Actions) > 0 {
		fmt.Fprintln(w, "\nsupervisor actions (last run):")
		for _, a := range rep.Actions {
			line := fmt.Sprintf("  %s %s %s", stamp(a.At), a.Project, oneLine(a.What, 100))
			if a.Error != "" {
				line += ": failed: " + oneLine(a.Error, 60)
			}
			fmt.Fprintln(w, line)
		}
	}
}

// stageTimes says where a run's time went: each milestone with the time
// it took to reach it from the one before ("ci 6m0s" for pr_to_ci).
func stageTimes(st []ledger.StageTime) string {
	parts := make([]string, 0, len(st))
	for _, s := range st {
		_, to, ok := strings.Cut(s.Name, "_to_")
		if !ok {
			to = s.Name
		}
		parts = append(parts, to+" "+s.Wall.Round(time.Second).String())
	}
	return orDash(strings.Join(parts, ", "))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "paused"
}

// printBackends says which model backends answer their health probe: an
// unreachable one gets no new work until it answers again.
func printBackends(w io.Writer, hs []claude.Health) {
	for _, h := range hs {
		switch {
		case h.Checked.IsZero():
			fmt.Fprintf(w, "backend %s (%s): not probed yet\n", h.Backend, h.BaseURL)
		case h.Reachable:
			fmt.Fprintf(w, "backend %s (%s): reachable (checked %s)\n", h.Backend, h.BaseURL, stamp(h.Checked))
		default:
			fmt.Fprintf(w, "backend %s (%s): UNREACHABLE since %s, no new work claimed on it: %s\n", h.Backend, h.BaseURL,
				stamp(h.Since), oneLine(h.Error, 80))
		}
	}
}

// printMemory prints what the daemon keeps of the bots' memory and of
// the formula overrides: per bot its journal, lessons and digests, and
// every override that was refused.
func printMemory(w io.Writer, rep Report) {
	for _, j := range rep.Journals {
		if j.NoProfile {
			fmt.Fprintf(w, "journal of %s: none: the bot has no .profile repository (no journal, no lessons)\n", j.Bot)
			continue
		}
		line := fmt.Sprintf("journal of %s: %d queued, last written %s", j.Bot, j.Queued, stamp(j.Last))
		if j.LastEntry != "" {
			line += ", last entry " + oneLine(j.LastEntry, 80)
		}
		if j.Failing != "" {
			line += ", not written: " + oneLine(j.Failing, 60)
		}
		fmt.Fprintln(w, line)
		line = fmt.Sprintf("lessons of %s: %d bytes", j.Bot, j.Lessons)
		if d := j.Digest; d != nil {
			line += ", last digest " + stamp(d.Last)
			if d.Failing != "" {
				line += ", digest failing: " + oneLine(d.Failing, 60) + ", retry " + stamp(d.RetryAt)
			}
		}
		fmt.Fprintln(w, line)
	}
	for _, f := range rep.Formulas {
		if f.Refused != "" {
			fmt.Fprintf(w, "formula %s of %s/%s: override refused (%s in force): %s\n", f.Name, f.Project, f.Role, f.Source, oneLine(f.Refused, 200))
		}
	}
}

// printEdge says where the edge is, what it routes and who may chat.
func printEdge(w io.Writer, e *EdgeStatus) {
	if e == nil {
		return
	}
	fmt.Fprintf(w, "edge %s:", e.URL)
	for _, r := range e.Routes {
		paths := "/*"
		if len(r.Paths) > 0 {
			paths = strings.Join(r.Paths, " ")
		}
		switch {
		case r.Disabled != "":
			fmt.Fprintf(w, " %s -> disabled (%s);", paths, r.Disabled)
		case r.Login:
			fmt.Fprintf(w, " %s -> %s (forge login);", paths, r.Upstream)
		default:
			fmt.Fprintf(w, " %s -> %s;", paths, r.Upstream)
		}
	}
	fmt.Fprintf(w, " chat users: %s\n", orDash(strings.Join(e.ChatUsers, ", ")))
}

// printVault prints the vault section of status.
func printVault(w io.Writer, vs []vault.ActionStatus) {
	if len(vs) == 0 {
		return
	}
	fmt.Fprintln(w, "vault actions:")
	for _, v := range vs {
		fmt.Fprintf(w, "  %s/%s  %s  %s  %s\n", v.Project, v.ID, orDash(v.Tier), v.State, v.Detail)
	}
}

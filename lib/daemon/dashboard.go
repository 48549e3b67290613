package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/vault"
)

// DashboardInterval is how often the dashboards are brought up to date:
// an issue is edited at most this often, and only when its text changed.
const DashboardInterval = time.Minute

// dashboardLastMerges is how many merges the dashboard lists.
const dashboardLastMerges = 5

// The factory's dashboard of a project is one pinned issue on its
// tracker, opened by the dev bot and edited in place: what is in flight,
// what waits for a human and why, what is blocked, the last merges and
// today's cost. Its checkboxes act: a ticked "Retry #N" gives blocked
// issue N back to the backlog, "Pause"/"Resume" a role pauses or resumes
// it on the project. Only the bot that opened the issue and users with
// write access may edit it, so a tick is a maintainer's word; the
// dashboard acts only on an issue the bot opened, and does not act on one
// whose text someone else could have written.

// dashboardState is what the daemon keeps of a project's dashboard.
type dashboardState struct {
	Issue int64 `json:"issue"`
}

// dashboard is one project's dashboard.
type dashboard struct {
	p     *config.Project
	forge *forge.RepoClient
	bot   string
	file  string
	en    *agent.Enablement
	log   zerolog.Logger
	issue int64
}

// dashboards are the dashboards of the projects that keep one.
type dashboards []*dashboard

// newDashboards makes the dashboard of each project that keeps one, as
// its dev bot; a project without a dev bot keeps none.
func newDashboards(s *Services, cfg *config.Config, en *agent.Enablement, log zerolog.Logger) dashboards {
	var out dashboards
	bot, err := cfg.Bot(config.RoleDev)
	if err != nil {
		return nil
	}
	for _, p := range cfg.Projects {
		if !p.Dashboard {
			continue
		}
		plog := log.With().Str("project", p.Name).Logger()
		fc, err := s.ForgeAs(p, bot, plog)
		if err != nil {
			plog.Warn().Err(err).Msg("no dashboard")
			continue
		}
		out = append(out, &dashboard{p: p, forge: fc, bot: bot.User, en: en, log: plog,
			file: filepath.Join(s.Layout.State(p.Name), "dashboard.json")})
	}
	return out
}

// repeat calls f at once and then every interval until ctx ends: the
// loop of the daemon's chores that follow the forge.
func repeat(ctx context.Context, every time.Duration, f func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// run brings the dashboards up to date every interval until ctx ends.
func (ds dashboards) run(ctx context.Context, every time.Duration, status func() Report) {
	if len(ds) == 0 {
		return
	}
	repeat(ctx, every, func() {
		rep := status()
		for _, d := range ds {
			if err := d.update(ctx, rep); err != nil && ctx.Err() == nil {
				d.log.Warn().Err(err).Msg("dashboard not updated")
			}
		}
	})
}

// update acts on the boxes ticked on the dashboard, then writes what rep
// and the tracker say now, if that changed.
func (d *dashboard) update(ctx context.Context, rep Report) error {
	iss, ok, err := d.current(ctx)
	if err != nil || !ok {
		return err
	}
	blocked, err := d.forge.ListIssues(ctx, forge.IssueQuery{Labels: []forge.LabelName{forge.LabelBlocked}})
	if err != nil {
		return err
	}
	acted := d.act(ctx, iss.Body, blocked)
	if acted {
		if blocked, err = d.forge.ListIssues(ctx, forge.IssueQuery{Labels: []forge.LabelName{forge.LabelBlocked}}); err != nil {
			return err
		}
	}
	paused, _ := d.en.List()
	body := renderDashboard(d.p, rep, blocked, paused)
	if body == iss.Body {
		return nil
	}
	_, err = d.forge.EditIssue(ctx, iss.Number, forge.IssueEdit{Body: &body})
	return err
}

// current is the dashboard issue, opened (and pinned) when the project
// has none. ok is false when there is none to keep: a maintainer closed
// it, which turns the dashboard off until it is reopened.
func (d *dashboard) current(ctx context.Context) (forge.Issue, bool, error) {
	if d.issue == 0 {
		st, _, err := atomicfile.ReadState[dashboardState](d.file)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return forge.Issue{}, false, err
		}
		d.issue = st.Issue
	}
	if d.issue != 0 {
		iss, err := d.forge.GetIssue(ctx, d.issue)
		switch {
		case errors.Is(err, forge.ErrNotFound):
			d.issue = 0 // deleted: open another
		case err != nil:
			return forge.Issue{}, false, err
		case iss.Author != d.bot:
			return forge.Issue{}, false, fmt.Errorf("dashboard #%d was not opened by %s", d.issue, d.bot)
		default:
			return iss, iss.State == forge.StateOpen, nil
		}
	}
	body := renderDashboard(d.p, Report{}, nil, nil)
	iss, err := d.forge.CreateIssue(ctx, forge.NewIssue{Title: "Factory dashboard", Body: body})
	if err != nil {
		return forge.Issue{}, false, err
	}
	d.issue = iss.Number
	if err := atomicfile.WriteState(d.file, dashboardState{Issue: iss.Number}); err != nil {
		return forge.Issue{}, false, err
	}
	if err := d.forge.PinIssue(ctx, iss.Number); err != nil {
		d.log.Info().Err(err).Int64("issue", iss.Number).Msg("dashboard not pinned")
	}
	d.log.Info().Int64("issue", iss.Number).Msg("dashboard opened")
	return iss, true, nil
}

// ticked finds the boxes a maintainer ticked: "- [x] Retry #N",
// "- [x] Pause ROLE", "- [x] Resume ROLE".
var ticked = regexp.MustCompile(`(?m)^- \[[xX]\] (Retry #([0-9]{1,12})|Pause ([a-z]+)|Resume ([a-z]+))\b`)

// act does what the ticked boxes of body ask; it reports whether it did
// anything. A retry is only of an issue that is blocked now.
func (d *dashboard) act(ctx context.Context, body string, blocked []forge.Issue) bool {
	acted := false
	for _, m := range ticked.FindAllStringSubmatch(body, -1) {
		switch {
		case m[2] != "":
			n, _ := strconv.ParseInt(m[2], 10, 64)
			if !slices.ContainsFunc(blocked, func(i forge.Issue) bool { return i.Number == n }) {
				continue
			}
			if err := d.retry(ctx, n); err != nil {
				d.log.Warn().Err(err).Int64("issue", n).Msg("dashboard: retry failed")
				continue
			}
			d.log.Info().Int64("issue", n).Msg("dashboard: blocked issue retried")
		case m[3] != "":
			if err := d.en.Pause(config.Role(m[3]), d.p.Name); err != nil {
				d.log.Warn().Err(err).Str("role", m[3]).Msg("dashboard: pause failed")
				continue
			}
			d.log.Info().Str("role", m[3]).Msg("dashboard: role paused")
		case m[4] != "":
			if err := d.en.Resume(config.Role(m[4]), d.p.Name); err != nil {
				d.log.Warn().Err(err).Str("role", m[4]).Msg("dashboard: resume failed")
				continue
			}
			d.log.Info().Str("role", m[4]).Msg("dashboard: role resumed")
		}
		acted = true
	}
	return acted
}

// retry gives blocked issue n back to the backlog, as a maintainer does
// by hand: the dev agent carries over its branch with fresh budgets. The
// comment that says so comes first: its marker makes the dev bot's
// application of backlog that follows count as the word of the
// maintainer who ticked the box (see agents/dev's provenance gate), and a
// gate that saw the label before the comment would wait needlessly.
func (d *dashboard) retry(ctx context.Context, n int64) error {
	m, err := forge.Marker{Kind: forge.MarkerRetried, Fields: map[string]string{"issue": strconv.FormatInt(n, 10)}}.String()
	if err != nil {
		return err
	}
	if _, err := d.forge.CreateComment(ctx, n, "Retried from the factory dashboard: back in the backlog.\n"+m); err != nil {
		return err
	}
	if err := d.forge.RemoveLabels(ctx, n, forge.LabelBlocked); err != nil {
		return err
	}
	return d.forge.AddLabels(ctx, n, forge.LabelBacklog)
}

// renderDashboard is the dashboard's text. It holds no clock, so that an
// idle factory never edits it.
func renderDashboard(p *config.Project, rep Report, blocked []forge.Issue, paused []agent.Pause) string {
	var b strings.Builder
	m, _ := forge.Marker{Kind: forge.MarkerDashboard, Fields: map[string]string{"project": p.Name}}.String()
	b.WriteString(m + "\n")
	b.WriteString("The factory keeps this issue up to date. Tick a box to act on it; only maintainers can edit this issue.\n")

	b.WriteString("\n## In flight\n\n")
	n := 0
	for _, it := range rep.InFlight {
		if it.Project != p.Name {
			continue
		}
		n++
		fmt.Fprintf(&b, "- %s", it.Role)
		if it.Issue != 0 {
			fmt.Fprintf(&b, " #%d", it.Issue)
		}
		if it.PR != 0 {
			fmt.Fprintf(&b, " (PR #%d)", it.PR)
		}
		fmt.Fprintf(&b, ": %s\n", it.Stage)
	}
	if n == 0 {
		b.WriteString("Nothing.\n")
	}

	b.WriteString("\n## Waiting for a human\n\n")
	n = 0
	for _, a := range rep.Vault {
		if a.Project != p.Name || a.State != string(vault.StatePending) {
			continue
		}
		n++
		fmt.Fprintf(&b, "- vault action `%s` (%s tier): %s\n", a.ID, orDash(a.Tier), orDash(a.Detail))
	}
	for _, it := range rep.InFlight {
		if it.Project != p.Name || it.Human == "" {
			continue
		}
		n++
		fmt.Fprintf(&b, "- %s #%d", it.Role, it.Issue)
		if it.PR != 0 {
			fmt.Fprintf(&b, " (PR #%d)", it.PR)
		}
		// What waits may name files a session chose: one line, no marker.
		fmt.Fprintf(&b, ": %s\n", forge.Neutralise(oneLine(it.Human, 200)))
	}
	if n == 0 {
		b.WriteString("Nothing.\n")
	}

	b.WriteString("\n## Blocked\n\n")
	slices.SortFunc(blocked, func(a, b forge.Issue) int { return int(a.Number - b.Number) })
	for _, i := range blocked {
		fmt.Fprintf(&b, "- [ ] Retry #%d %s\n", i.Number, forge.Neutralise(oneLine(i.Title, 120)))
	}
	if len(blocked) == 0 {
		b.WriteString("Nothing.\n")
	}

	b.WriteString("\n## Roles\n\n")
	var roles []string
	for _, j := range rep.Jobs {
		if j.Project == p.Name && !slices.Contains(roles, j.Role) {
			roles = append(roles, j.Role)
		}
	}
	slices.Sort(roles)
	for _, r := range roles {
		isPaused := slices.ContainsFunc(paused, func(ps agent.Pause) bool {
			return string(ps.Role) == r && (ps.Project == "" || ps.Project == p.Name)
		})
		if isPaused {
			fmt.Fprintf(&b, "- [ ] Resume %s (paused)\n", r)
		} else {
			fmt.Fprintf(&b, "- [ ] Pause %s\n", r)
		}
	}

	b.WriteString("\n## Last merges\n\n")
	var merges []ledger.Record
	for _, r := range rep.Recent {
		if r.Project == p.Name && r.Reason == ledger.ReasonMerged {
			merges = append(merges, r)
		}
	}
	slices.SortFunc(merges, func(a, b ledger.Record) int { return b.End.Compare(a.End) })
	for _, r := range merges[:min(len(merges), dashboardLastMerges)] {
		fmt.Fprintf(&b, "- PR #%d for #%d, %s\n", r.PR, r.Issue, r.End.UTC().Format(time.DateOnly))
	}
	if len(merges) == 0 {
		b.WriteString("None recently.\n")
	}

	cost, runs := 0.0, 0
	today := time.Now().UTC().Format(time.DateOnly)
	for _, r := range rep.Recent {
		if r.Project == p.Name && r.End.UTC().Format(time.DateOnly) == today {
			cost += r.CostUSD
			runs++
		}
	}
	fmt.Fprintf(&b, "\n## Today\n\n%d runs, $%.2f.\n", runs, cost)
	return b.String()
}

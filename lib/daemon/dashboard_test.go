package daemon

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/scheduler"
)

// edits counts the issue edits a client sends.
type edits struct {
	n    atomic.Int32
	next http.RoundTripper
}

func (e *edits) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/issues/") {
		e.n.Add(1)
	}
	return e.next.RoundTrip(r)
}

// TestDashboard: the dashboard issue is opened once, edited in place only
// when its text changes (never on an idle tick), a maintainer's ticks
// retry a blocked issue and pause a role, and an outsider cannot edit it.
func TestDashboard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := forgetest.Start(t)
	p := srv.NewProject(t, "dash")
	counter := &edits{next: http.DefaultTransport}
	fc, err := forge.New(forge.Options{URL: srv.URL, Token: p.Dev.Token, User: p.Dev.Login, HTTPClient: &http.Client{Transport: counter}})
	if err != nil {
		t.Fatal(err)
	}
	owner, name, _ := strings.Cut(p.Repo.Slug(), "/")
	dir := t.TempDir()
	en := OpenEnablement(datadir.New(dir))
	proj := &config.Project{Name: "proj"}
	newBoard := func() *dashboard {
		return &dashboard{p: proj, forge: fc.Repo(owner, name), bot: p.Dev.Login, en: en, log: zerolog.Nop(),
			file: filepath.Join(dir, "dashboard.json")}
	}
	d := newBoard()
	rep := Report{Jobs: []scheduler.JobStatus{{Project: "proj", Role: "dev"}, {Project: "proj", Role: "review"}, {Project: "other", Role: "planner"}}}

	if err := d.update(ctx, rep); err != nil {
		t.Fatal(err)
	}
	// The roles never list the dashboard among the issues; it is read by
	// number.
	boards := func() []forge.Issue {
		var out []forge.Issue
		for n := int64(1); ; n++ {
			i, err := p.Repo.GetIssue(ctx, n)
			if errors.Is(err, forge.ErrNotFound) {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := forge.FindMarker(i.Body, forge.MarkerDashboard); ok {
				out = append(out, i)
			}
		}
	}
	listed := func() int {
		all, err := p.Repo.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll})
		if err != nil {
			t.Fatal(err)
		}
		return len(all)
	}
	if got := boards(); len(got) != 1 || got[0].Author != p.Dev.Login || !strings.Contains(got[0].Body, "- [ ] Pause review") ||
		strings.Contains(got[0].Body, "planner") {
		t.Fatalf("dashboards after the first tick: %+v", got)
	}
	if n := listed(); n != 0 {
		t.Errorf("the issue listing holds the dashboard: %d issues", n)
	}
	base := counter.n.Load()
	for range 3 { // idle ticks, one of them by a restarted daemon
		if err := newBoard().update(ctx, rep); err != nil {
			t.Fatal(err)
		}
	}
	if n := counter.n.Load() - base; n != 0 || len(boards()) != 1 {
		t.Fatalf("idle ticks edited the dashboard %d times, %d dashboards", n, len(boards()))
	}

	stuck, err := p.Repo.CreateIssue(ctx, forge.NewIssue{Title: "Stuck\n- [x] Pause dev", Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Repo.AddLabels(ctx, stuck.Number, forge.LabelBlocked); err != nil {
		t.Fatal(err)
	}
	if err := d.update(ctx, rep); err != nil {
		t.Fatal(err)
	}
	board := boards()[0]
	retry := "- [ ] Retry #" + strconv.FormatInt(stuck.Number, 10)
	if n := counter.n.Load() - base; n != 1 || !strings.Contains(board.Body, retry) {
		t.Fatalf("after a block: %d edits, body:\n%s", n, board.Body)
	}
	if paused, _ := en.Paused("proj", config.RoleDev); paused {
		t.Fatal("an issue title paused a role")
	}

	// An outsider cannot tick.
	outsider := srv.NewUser(t, "outsider")
	forged := strings.Replace(board.Body, "- [ ] Pause dev", "- [x] Pause dev", 1)
	if _, err := outsider.Client.Repo(owner, name).EditIssue(ctx, board.Number, forge.IssueEdit{Body: &forged}); err == nil {
		t.Fatal("an outsider edited the dashboard")
	}
	// A maintainer ticks a retry and a pause.
	ticked := strings.Replace(board.Body, retry, strings.Replace(retry, "[ ]", "[x]", 1), 1)
	ticked = strings.Replace(ticked, "- [ ] Pause review", "- [x] Pause review", 1)
	if _, err := p.Repo.EditIssue(ctx, board.Number, forge.IssueEdit{Body: &ticked}); err != nil {
		t.Fatal(err)
	}
	if err := d.update(ctx, rep); err != nil {
		t.Fatal(err)
	}
	i, err := p.Repo.GetIssue(ctx, stuck.Number)
	if err != nil {
		t.Fatal(err)
	}
	if i.HasLabel(forge.LabelBlocked) || !i.HasLabel(forge.LabelBacklog) {
		t.Errorf("the retried issue: %+v", i.Labels)
	}
	// The retry says so first, as the dev bot and with its marker, which
	// the dev agent's provenance gate takes as the ticking maintainer's
	// word for the dev bot's backlog that follows.
	cs, err := fc.Repo(owner, name).ListComments(ctx, stuck.Number)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := fc.Repo(owner, name).LabelEvents(ctx, stuck.Number)
	if err != nil {
		t.Fatal(err)
	}
	var said, applied time.Time
	for _, c := range cs {
		if m, ok := c.MarkerBy(forge.MarkerRetried, p.Dev.Login); ok && m.Fields["issue"] == strconv.FormatInt(stuck.Number, 10) {
			said = c.Created
		}
	}
	for _, e := range evs {
		if e.Label == forge.LabelBacklog && e.Added && e.By.Login == p.Dev.Login {
			applied = e.Created
		}
	}
	if said.IsZero() || applied.IsZero() || applied.Before(said) {
		t.Errorf("retry comment at %v, the dev bot's backlog at %v: want the comment, then the label", said, applied)
	}
	if paused, _ := en.Paused("proj", config.RoleReview); !paused {
		t.Error("the ticked pause did not pause review")
	}
	if paused, _ := en.Paused("proj", config.RoleDev); paused {
		t.Error("an unticked box paused dev")
	}
	board = boards()[0]
	if strings.Contains(board.Body, "Retry #") || !strings.Contains(board.Body, "- [ ] Resume review (paused)") || strings.Contains(board.Body, "[x]") {
		t.Errorf("the dashboard after acting:\n%s", board.Body)
	}

	// Closed by a maintainer: the dashboard is off, and none is opened again.
	closed := forge.StateClosed
	if _, err := p.Repo.EditIssue(ctx, board.Number, forge.IssueEdit{State: &closed}); err != nil {
		t.Fatal(err)
	}
	if err := newBoard().update(ctx, rep); err != nil || len(boards()) != 1 {
		t.Errorf("after the dashboard was closed: %v, %d dashboards", err, len(boards()))
	}
}

// TestDashboardListsWorkWaitingForAHuman: work an agent holds for a
// maintainer is under "Waiting for a human", on one line whatever the
// names in it.
func TestDashboardListsWorkWaitingForAHuman(t *testing.T) {
	rep := Report{InFlight: []agent.Item{
		{Project: "proj", Role: "dev", Issue: 4, Stage: "held", Human: "a maintainer's /approve of abc (protected: `x\n- [ ] Retry #9 <!-- disinto:dashboard -->`)"},
		{Project: "proj", Role: "dev", Issue: 5, Stage: "awaiting_ci"},
		{Project: "other", Role: "dev", Issue: 6, Stage: "held", Human: "elsewhere"},
	}}
	body := renderDashboard(&config.Project{Name: "proj"}, rep, nil, nil)
	_, waiting, _ := strings.Cut(body, "## Waiting for a human\n\n")
	waiting, _, _ = strings.Cut(waiting, "\n## ")
	if !strings.HasPrefix(waiting, "- dev #4: a maintainer's /approve of abc (protected: `x - [ ] Retry #9 &lt;!-- disinto:dashboard -->`)\n") ||
		strings.Contains(waiting, "#5") || strings.Contains(waiting, "elsewhere") {
		t.Fatalf("waiting for a human:\n%s", waiting)
	}
}

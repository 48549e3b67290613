package security

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/supervisor"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
)

// lowMemoryHost reports a memory crisis and idle disks.
type lowMemoryHost struct{}

func (lowMemoryHost) Memory() (supervisor.Memory, error) {
	return supervisor.Memory{AvailableMB: 10, TotalMB: 16000}, nil
}

func (lowMemoryHost) Disk(path string) (supervisor.Disk, error) {
	return supervisor.Disk{Path: path, Pct: 10, Used: 10 << 30, Size: 100 << 30}, nil
}

// TestTrustIncidentMarkerFromAnOutsider: an outsider opens issues carrying
// the supervisor's incident marker, one naming a condition that holds
// (memory pressure) and one naming a condition that does not (disk
// pressure). The supervisor neither takes the first for its incident
// (editing the outsider's text) nor resolves the second (commenting and
// closing it): both stay as the outsider left them, and the supervisor
// files an incident of its own.
func TestTrustIncidentMarkerFromAnOutsider(t *testing.T) {
	ctx := testCtx(t)
	srv := gitea.Get(t)
	p := srv.NewProject(t, "sup")
	bot, mallory := srv.NewUser(t, "supervisor-bot"), srv.NewUser(t, "mallory")
	if err := p.Repo.AddCollaborator(ctx, bot.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	as := mallory.Client.Repo(p.Repo.Owner(), p.Repo.Name())
	decoys := map[string]forge.Issue{}
	for fp, rule := range map[string]string{"memory-pressure": "memory", "disk-pressure": "disk"} {
		mk, err := forge.Marker{Kind: forge.MarkerIncident, Fields: map[string]string{"fingerprint": fp, "rule": rule}}.String()
		if err != nil {
			t.Fatal(err)
		}
		is, err := as.CreateIssue(ctx, forge.NewIssue{Title: "my bug report", Body: mk + "\nPlease look at my bug."})
		if err != nil {
			t.Fatal(err)
		}
		decoys[fp] = is
	}

	data := t.TempDir()
	proj := &config.Project{Name: "sup", Repo: p.Repo.Slug(), PrimaryBranch: "main", Supervisor: config.DefaultSupervisor()}
	now := time.Now()
	a, err := supervisor.New(supervisor.Options{Project: proj, Forge: bot.Client.Repo(p.Repo.Owner(), p.Repo.Name()),
		Host: lowMemoryHost{}, DataDir: data, StateDir: filepath.Join(data, "state"), Now: func() time.Time { return now },
		Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := a.RunOnce(ctx, ""); err != nil {
			t.Fatal(err)
		}
		now = now.Add(20 * time.Minute)
	}

	for fp, was := range decoys {
		is, err := p.Repo.GetIssue(ctx, was.Number)
		if err != nil {
			t.Fatal(err)
		}
		if is.State != forge.StateOpen || is.Body != was.Body {
			t.Errorf("the outsider's issue #%d (%s) was changed: %s\n%s", is.Number, fp, is.State, is.Body)
		}
		cs, err := p.Repo.ListComments(ctx, was.Number)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			t.Errorf("the supervisor commented on the outsider's issue #%d (%s): %s", was.Number, fp, c.Body)
		}
	}
	open, err := p.Repo.ListIssues(ctx, forge.IssueQuery{State: forge.StateOpen})
	if err != nil {
		t.Fatal(err)
	}
	own := 0
	for _, is := range open {
		if m, ok := is.MarkerBy(forge.MarkerIncident, bot.Login); ok && m.Fields["fingerprint"] == "memory-pressure" {
			own++
		}
	}
	if own != 1 {
		t.Errorf("the supervisor's own memory incidents: %d, want 1", own)
	}
}

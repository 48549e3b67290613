package daemon

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/scheduler"
)

// TestReplicasSplitTheProjects: two replicas of one configuration each
// schedule the roles of the projects they own and no other, together
// every project once; each says in status, as JSON, text and page, its
// slot, the count and what it owns.
func TestReplicasSplitTheProjects(t *testing.T) {
	dir := t.TempDir()
	var all []string
	for i := range 6 {
		name := fmt.Sprintf("p%d", i)
		all = append(all, name)
		body := fmt.Sprintf("name = %q\nrepo = \"o/%s\"\n", name, name)
		if err := os.WriteFile(filepath.Join(dir, name+".toml"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	scheduled := map[string][]string{}
	for slot := 1; slot <= 2; slot++ {
		cfg, err := config.Load(dir, filepath.Join(dir, "none"), []string{"AGENT_ROLES=dev",
			fmt.Sprintf("DISINTO_REPLICA_SLOT=%d", slot), "DISINTO_REPLICAS=2"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(cfg, CoreOptions{DataDir: sessionDataDir(t), Console: io.Discard, Formulas: fstest.MapFS{}},
			Registry{config.RoleDev: func(Deps) (agent.Agent, error) { return failTick{}, nil }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		var mine []string
		for _, j := range d.Scheduler().Snapshot() {
			scheduled[j.Project] = append(scheduled[j.Project], fmt.Sprintf("%s by %d", j.Role, slot))
			mine = append(mine, j.Project)
		}
		rep := d.Status()
		if rep.Replica == nil || rep.Replica.Slot != slot || rep.Replica.Replicas != 2 || rep.Replica.Configured != 6 {
			t.Fatalf("slot %d: status replica = %+v", slot, rep.Replica)
		}
		slices.Sort(mine)
		if !slices.Equal(mine, rep.Replica.Owned) {
			t.Errorf("slot %d schedules %v but says it owns %v", slot, mine, rep.Replica.Owned)
		}
		var text bytes.Buffer
		rep.WriteText(&text, true)
		if want := fmt.Sprintf("replica: slot %d of 2, owns %d of 6 projects: %s", slot, len(mine), strings.Join(mine, ", ")); !strings.Contains(text.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, text.String())
		}
		page, err := renderStatusPage(rep, func(s string) string { return s }, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("replica %d of 2 · owns %d of 6 projects", slot, len(mine)); !strings.Contains(string(page), want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	for _, p := range all {
		if len(scheduled[p]) != 1 {
			t.Errorf("project %s: jobs %v; want its dev job on exactly one replica", p, scheduled[p])
		}
	}
}

// TestSingleReplicaReportsNoShard: without the variables, the daemon owns
// every project and its status has no replica section.
func TestSingleReplicaReportsNoShard(t *testing.T) {
	cfg := &config.Config{Projects: []*config.Project{{Name: "a"}, {Name: "b"}}}
	got, info := OwnedConfig(cfg)
	if got != cfg || info != nil {
		t.Errorf("OwnedConfig of a single replica = %p, %+v; want cfg itself and no info", got, info)
	}
}

// TestHandoverWaitsAnInterval: on a replica, a job that would run at
// once without a record of its last run waits its interval instead (the
// project may have just moved from a replica that ran it); jobs that run
// at every start stay as they are.
func TestHandoverWaitsAnInterval(t *testing.T) {
	for _, c := range []struct{ in, want scheduler.FirstRun }{
		{scheduler.FirstRunSoon, scheduler.FirstRunAfterInterval},
		{scheduler.FirstRunAfterInterval, scheduler.FirstRunAfterInterval},
		{scheduler.FirstRunEveryStart, scheduler.FirstRunEveryStart},
	} {
		if got := afterHandover(scheduler.Job{FirstRun: c.in}).FirstRun; got != c.want {
			t.Errorf("afterHandover(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
)

// TestStatusJSONShowsHeartbeats: /status (what status --json prints)
// carries the heartbeat of running work, with the step it last made, and
// the text status names stalled work.
func TestStatusJSONShowsHeartbeats(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile("../../projects/example.toml.example")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "example.toml"), example, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir, filepath.Join(dir, "none"), []string{"AGENT_ROLES=dev"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, CoreOptions{DataDir: sessionDataDir(t), Console: io.Discard, Formulas: fstest.MapFS{}}, Registry{config.RoleDev: func(Deps) (agent.Agent, error) { return failTick{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	release, stepped := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release); _ = d.Runtime.Wait(context.Background()) })
	err = d.Runtime.Tick(t.Context(), tickFunc(func(ctx context.Context, run *agent.Run) error {
		run.Go(ctx, "issue-3", func(ctx context.Context) {
			agent.Step(ctx, "session")
			close(stepped)
			<-release
		})
		return nil
	}), cfg.Projects[0], config.RoleDev, agent.CauseSchedule)
	if err != nil {
		t.Fatal(err)
	}
	<-stepped
	srv := httptest.NewServer(d.StatusHandler())
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Heartbeats) != 1 {
		t.Fatalf("heartbeats = %+v, want the running work's", rep.Heartbeats)
	}
	h := rep.Heartbeats[0]
	if h.Project != "example" || h.Role != "dev" || h.Key != "issue-3" || h.Step != "session" || h.LastProgressAt.IsZero() || h.Stalled {
		t.Errorf("heartbeat = %+v", h)
	}

	h.Stalled, h.PGID, h.Deadline = true, 4242, time.Now().Add(time.Hour)
	var out bytes.Buffer
	printStalled(&out, []agent.Heartbeat{h, {Key: "issue-9"}}, h.LastProgressAt.Add(31*time.Minute))
	if got := out.String(); !strings.Contains(got, "example dev issue-3: STALLED, no progress for 31m0s (last: session), session pgid 4242") ||
		strings.Contains(got, "issue-9") {
		t.Errorf("stalled lines = %q", got)
	}
}

package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/memory"
	"github.com/disinto/disinto/tests/internal/rig"
)

// TestProfilePushRefused: while the forge refuses every push to the dev
// bot's .profile repository the dev run still ends merged, and its journal
// entry lands once the forge takes pushes again. The review bot has no
// .profile repository at all: it works as before, and the daemon says so
// once.
func TestProfilePushRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t, setup{env: []string{"DISINTO_SYNC_INTERVAL=2s"}}, approve(), implement("dev", "widget.txt", "a widget"))
	ctx := testCtx(t)
	if _, err := w.Dev.Client.CreateRepo(ctx, forge.NewRepo{Name: ".profile", AutoInit: true, DefaultBranch: "main", Private: true}); err != nil {
		t.Fatal(err)
	}
	w.proxy.SetChaos(forgetest.Chaos{Seed: 1, FailRate: 1, Match: func(r *http.Request) bool {
		return strings.HasSuffix(r.URL.Path, "/.profile.git/git-receive-pack")
	}})
	d := w.start()
	n := w.backlog("Add a widget", "dev")
	w.converge(".profile pushes refused", n, outcome{merged: true, file: "widget.txt", line: "a widget"}, 4*time.Minute)
	profile := w.Dev.Client.Repo(w.Dev.Login, ".profile")
	journalPath := "journal/" + time.Now().UTC().Format("2006-01-02") + ".md"
	if _, err := profile.GetFile(ctx, journalPath, "main"); err == nil {
		t.Fatal("the journal landed through a forge that refuses every push")
	}
	var st memStatus
	rig.Await(t, "the queued entry in status", time.Minute, w.died, func() bool {
		st = memoryStatus(t, d)
		j, ok := st.journal(w.Dev.Login)
		return ok && j.Queued > 0 && j.Failing != ""
	})
	if len(w.proxy.Injected()) == 0 {
		t.Fatalf("no .profile push was refused: the fault did not happen (injected %v)", w.proxy.Injected())
	}

	w.proxy.SetChaos(forgetest.Chaos{})
	rig.Await(t, "the journal entry after the forge recovered", 5*time.Minute, w.died, func() bool {
		f, err := profile.GetFile(ctx, journalPath, "main")
		return err == nil && strings.Contains(string(f.Content), fmt.Sprintf("issue #%d, pull request #", n)) &&
			strings.Contains(string(f.Content), ", merged")
	})
	rig.Await(t, "the review bot without a .profile in status", time.Minute, w.died, func() bool {
		j, ok := memoryStatus(t, d).journal(w.Reviewer.Login)
		return ok && j.NoProfile
	})
	if got := len(w.logLines("INF", "has no .profile repository")); got != 1 {
		t.Errorf("the missing .profile was said %d times, want once:\n%s", got, w.lastLines(40))
	}
	// The drain records its success just after the push landed.
	rig.Await(t, "the dev bot's journal written in status", time.Minute, w.died, func() bool {
		j, _ := memoryStatus(t, d).journal(w.Dev.Login)
		return !j.NoProfile && j.Queued == 0 && j.Failing == "" && strings.Contains(j.LastEntry, fmt.Sprintf("issue #%d", n))
	})
	if err := d.Stop(t, time.Minute); err != nil {
		t.Errorf("the daemon's exit after SIGTERM: %v", err)
	}
}

// memStatus is the memory part of /status.
type memStatus struct {
	Journals []memory.Status `json:"journals"`
}

func (s memStatus) journal(bot string) (memory.Status, bool) {
	for _, j := range s.Journals {
		if j.Bot == bot {
			return j, true
		}
	}
	return memory.Status{}, false
}

// memoryStatus reads the daemon's /status.
func memoryStatus(t *testing.T, d *rig.Daemon) memStatus {
	t.Helper()
	resp, err := http.Get("http://" + d.StatusListen + "/status")
	if err != nil {
		return memStatus{}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var st memStatus
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("/status: %v\n%s", err, data)
	}
	return st
}

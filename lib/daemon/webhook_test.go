package daemon

import (
	"context"
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
	"github.com/disinto/disinto/lib/webhook"
)

// tickSignal is an agent whose every tick is sent on its channel.
type tickSignal chan struct{}

func (c tickSignal) Tick(context.Context, *agent.Run) error {
	c <- struct{}{}
	return nil
}

// TestWebhookWakesRoleWithinDaemon: a signed event of a kind a row of the
// role table names reaches that role's tick through the daemon alone
// (receiver, scheduler, runtime), long before its cadence would.
func TestWebhookWakesRoleWithinDaemon(t *testing.T) {
	spec := config.RoleSpec{Name: "hooked", Scheduled: true, Interval: time.Hour, IntervalEnv: "HOOKED_INTERVAL",
		Project: config.AccessRead, Scopes: config.ReaderScopes, Wakes: []string{"issue_comment"}, StateDir: "hooked"}
	unregister, err := config.RegisterRole(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unregister)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "alpha.toml"), []byte("name = \"alpha\"\nrepo = \"acme/alpha\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir, filepath.Join(dir, "none"), []string{"AGENT_ROLES=hooked", "DISINTO_WEBHOOK_SECRET=s3cret-hook"})
	if err != nil {
		t.Fatal(err)
	}
	ticks := make(tickSignal, 1)
	d, err := New(cfg, CoreOptions{DataDir: sessionDataDir(t), Console: io.Discard, Formulas: fstest.MapFS{}},
		Registry{spec.Name: func(Deps) (agent.Agent, error) { return ticks, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Scheduler().Run(ctx, ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	body := `{"action":"created","issue":{"number":3},"comment":{"body":"hi"},"repository":{"full_name":"acme/alpha"}}`
	req := httptest.NewRequest(http.MethodPost, webhook.Path, strings.NewReader(body))
	req.Header.Set("X-Forgejo-Event", "issue_comment")
	req.Header.Set("X-Forgejo-Signature", webhook.Sign([]byte("s3cret-hook"), []byte(body)))
	w := httptest.NewRecorder()
	d.HookHandler().ServeHTTP(w, req)
	if w.Code != http.StatusAccepted {
		t.Fatalf("webhook answered %d: %s", w.Code, w.Body.String())
	}
	select {
	case <-ticks:
	case <-time.After(30 * time.Second):
		t.Fatal("the event did not wake the role's tick")
	}
}

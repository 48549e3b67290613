package daemon

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/redact"
)

// TestForgeClientsRedactWrites checks the wiring of the forge clients the
// agents get: a secret of the configuration (here a vault token that leaked
// into the daemon's environment) never reaches the forge in a comment.
func TestForgeClientsRedactWrites(t *testing.T) {
	var mu sync.Mutex
	var posted string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posted += string(b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":1,"body":"ok"}`)
	}))
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.toml"), []byte("name = \"p\"\nrepo = \"o/p\"\nforge_url = \""+srv.URL+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const vault = "ghp_0123456789abcdefVAULT"
	cfg, err := config.Load(dir, filepath.Join(dir, "none.env"), []string{"FORGE_TOKEN=dev-token-0123456789", "GITHUB_TOKEN=" + vault})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServices(cfg, redact.New(cfg.Secrets()...), nil, CoreOptions{DataDir: sessionDataDir(t), AllowUnisolated: true, Formulas: fstest.MapFS{}}, logx.Nop())
	if err != nil {
		t.Fatal(err)
	}
	b, err := cfg.Bot(config.RoleDev)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := s.ForgeAs(cfg.Projects[0], b, logx.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fc.CreateComment(context.Background(), 1, "the model printed "+vault); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(posted, vault) || !strings.Contains(posted, "[REDACTED]") {
		t.Fatalf("posted %q", posted)
	}
}

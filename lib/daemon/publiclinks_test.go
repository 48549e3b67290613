package daemon

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
)

// TestStatusLinksUsePublicForgeURL: under compose the daemon reaches the
// forge at http://forgejo:3000, which no browser resolves; /status and the
// page link the forge at FORGE_PUBLIC_URL, and at the forge's own URL when
// none is set.
func TestStatusLinksUsePublicForgeURL(t *testing.T) {
	tests := []struct {
		name   string
		public string
		want   string
	}{
		{"public URL set", "https://forge.example.org/", "https://forge.example.org/acme/widget"},
		{"public URL unset", "", "http://forgejo:3000/acme/widget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := "name = \"widget\"\nrepo = \"acme/widget\"\nforge_url = \"http://forgejo:3000\"\n"
			if err := os.WriteFile(filepath.Join(dir, "widget.toml"), []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"AGENT_ROLES=dev", "FORGE_URL=http://forgejo:3000"}
			if tt.public != "" {
				env = append(env, "FORGE_PUBLIC_URL="+tt.public)
			}
			cfg, err := config.Load(dir, filepath.Join(dir, "none"), env)
			if err != nil {
				t.Fatal(err)
			}
			d, err := New(cfg, CoreOptions{DataDir: sessionDataDir(t), Console: io.Discard, Formulas: fstest.MapFS{}},
				Registry{config.RoleDev: func(Deps) (agent.Agent, error) { return failTick{}, nil }})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = d.Close() })
			srv := httptest.NewServer(d.StatusHandler())
			t.Cleanup(srv.Close)

			var rep Report
			getBody(t, srv.URL+"/status", func(r io.Reader) error { return json.NewDecoder(r).Decode(&rep) })
			if len(rep.Projects) != 1 || rep.Projects[0].URL != tt.want {
				t.Errorf("/status projects = %+v, want URL %s", rep.Projects, tt.want)
			}
			var page strings.Builder
			getBody(t, srv.URL+"/", func(r io.Reader) error { _, err := io.Copy(&page, r); return err })
			if !strings.Contains(page.String(), `href="`+tt.want+`"`) {
				t.Errorf("page does not link %s", tt.want)
			}
			if tt.public != "" && strings.Contains(page.String(), "forgejo:3000") {
				t.Error("page links the internal forge URL")
			}
		})
	}
}

// getBody GETs url, wants 200 and hands the body to read.
func getBody(t *testing.T, url string, read func(io.Reader) error) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := read(resp.Body); err != nil {
		t.Fatal(err)
	}
}

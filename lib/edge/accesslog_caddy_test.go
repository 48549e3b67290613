package edge_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/edge"
)

// TestCaddyAccessLog: the real edge, told where, writes its access log
// as JSON lines that ReadAccessLog reads back, each request under the
// route that served it, the query string dropped.
func TestCaddyAccessLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "access.log")
	st := startStackWith(t, statusToken, func(c *edge.Config) { c.AccessLog = logPath })
	start := time.Now().Add(-time.Minute)
	for _, path := range []string{"/owner/repo/issues?state=open", "/", edge.LoginPath, "/chat/c/1", "/factory/"} {
		st.get(t, path, nil)
	}
	routes := edge.Config{}.Routes()
	var counts map[string]int
	var paths []string
	var skipped int
	deadline := time.Now().Add(10 * time.Second)
	for {
		counts, paths = map[string]int{}, nil
		f, err := os.Open(logPath)
		if err == nil {
			skipped, err = edge.ReadAccessLog(f, func(h edge.Hit) {
				counts[edge.RouteOf(routes, h.Path)]++
				paths = append(paths, h.Path)
				if h.Time.Before(start) || h.Status == 0 || h.Client == "" {
					t.Errorf("hit %+v: want a recent time, a status and a client", h)
				}
			})
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(paths) >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if counts[edge.RouteForge] != 2 || counts[edge.RouteChatLogin] != 1 || counts[edge.RouteChat] != 1 || counts[edge.RouteFactory] != 1 {
		t.Errorf("requests by route %v (paths %v), want forge 2, chat-login, chat and factory 1 each", counts, paths)
	}
	if skipped != 0 {
		t.Errorf("%d lines of the real log were not read as access entries", skipped)
	}
	for _, p := range paths {
		if p == "/owner/repo/issues?state=open" {
			t.Errorf("the query string was kept: %q", p)
		}
	}
}

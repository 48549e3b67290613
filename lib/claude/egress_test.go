package claude_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
)

// TestEgressProxyEnv: with an egress proxy, a session's proxy variables
// are the proxy of its project's sessions, whatever the daemon's own
// environment said, and loopback (the gateway) goes direct.
func TestEgressProxyEnv(t *testing.T) {
	t.Parallel()
	var asked []string
	e := newFakeExec(t, func(o *claude.Options) {
		o.BaseEnv = append(o.BaseEnv, "HTTPS_PROXY=http://corporate:3128", "no_proxy=*")
		o.EgressProxy = func(project string) string {
			asked = append(asked, project)
			return "http://" + project + ":secret@127.0.0.1:4100"
		}
	})
	record := filepath.Join(t.TempDir(), "record.json")
	inv, _ := fakeInv(t, claudetest.FakeResult, map[string]string{claudetest.FakeRecord: record})
	ctx := claude.WithScope(context.Background(), claude.Scope{Project: "proj", Role: "dev"})
	if _, err := e.Run(ctx, inv); err != nil {
		t.Fatal(err)
	}
	var rec claudetest.FakeRecordData
	readJSON(t, record, &rec)
	got := map[string]string{}
	for _, kv := range rec.Env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s set twice", k)
		}
		got[k] = v
	}
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"} {
		if got[k] != "http://proj:secret@127.0.0.1:4100" {
			t.Errorf("%s = %q", k, got[k])
		}
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		if got[k] != "localhost,127.0.0.1,::1" {
			t.Errorf("%s = %q", k, got[k])
		}
	}
	if len(asked) != 1 || asked[0] != "proj" {
		t.Errorf("asked the proxy URL of %v, want [proj]", asked)
	}
}

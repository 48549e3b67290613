package forge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// fakeRepoAPI answers GET /repos/o/r with repo and records the bodies of
// the PATCH and POST requests it gets, by path.
type fakeRepoAPI struct {
	repo string
	mu   sync.Mutex
	sent map[string][]map[string]any
}

func (f *fakeRepoAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodPatch || r.Method == http.MethodPost {
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &body)
		f.mu.Lock()
		f.sent[r.Method+" "+r.URL.Path] = append(f.sent[r.Method+" "+r.URL.Path], body)
		f.mu.Unlock()
	}
	switch r.Method + " " + r.URL.Path {
	case "GET /api/v1/repos/o/r":
		_, _ = io.WriteString(w, f.repo)
	case "GET /api/v1/repos/o/r/branch_protections/main":
		_, _ = io.WriteString(w, `{"rule_name":"main"}`)
	default:
		_, _ = io.WriteString(w, `{}`)
	}
}

func fakeRepo(t *testing.T, repo string) (*forge.RepoClient, *fakeRepoAPI) {
	t.Helper()
	api := &fakeRepoAPI{repo: repo, sent: map[string][]map[string]any{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	c, err := forge.New(forge.Options{URL: srv.URL, Token: "t", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c.Repo("o", "r"), api
}

// Forgejo takes allow_manual_merge but does not show it: the setting is
// made every time there, and no change is claimed.
func TestEnsureManualMergeOnEveryForge(t *testing.T) {
	for _, tc := range []struct {
		name, repo            string
		wantPatch, wantChange bool
	}{
		{"shown off", `{"allow_manual_merge":false}`, true, true},
		{"shown on", `{"allow_manual_merge":true}`, false, false},
		{"not shown (Forgejo)", `{"name":"r"}`, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, api := fakeRepo(t, tc.repo)
			changed, err := rc.EnsureManualMerge(ctxFor(t))
			if err != nil {
				t.Fatal(err)
			}
			patches := api.sent["PATCH /api/v1/repos/o/r"]
			if (len(patches) > 0) != tc.wantPatch || changed != tc.wantChange {
				t.Fatalf("patches %v, changed %v; want patch %v, changed %v", patches, changed, tc.wantPatch, tc.wantChange)
			}
			if tc.wantPatch && patches[0]["allow_manual_merge"] != true {
				t.Errorf("PATCH body %v does not allow manual merges", patches[0])
			}
		})
	}
}

// An edited protection rule is named by the path only: the edit body
// carries no name, which Gitea and Forgejo do not take there.
func TestSetBranchProtectionEditSendsNoName(t *testing.T) {
	rc, api := fakeRepo(t, `{}`)
	if err := rc.SetBranchProtection(ctxFor(t), forge.Protection{Branch: "main", RequiredApprovals: 1}); err != nil {
		t.Fatal(err)
	}
	edits := api.sent["PATCH /api/v1/repos/o/r/branch_protections/main"]
	if len(edits) != 1 {
		t.Fatalf("edits: %v", api.sent)
	}
	for _, k := range []string{"branch_name", "rule_name"} {
		if v, ok := edits[0][k]; ok && v != "" {
			t.Errorf("edit body names the rule: %s=%v", k, v)
		}
	}
	if edits[0]["required_approvals"] != float64(1) {
		t.Errorf("edit body lost the settings: %v", edits[0])
	}
}

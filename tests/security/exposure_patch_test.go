package security

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/patch"
)

// TestExposureCodePassingAsDocs opens pull requests on the real forge whose
// diff is crafted to look like documentation, and asks the rule the dev
// and review agents apply to a pull request's diff (no CI on the dev side,
// review with red CI) whether they hold code. The attack works when a code
// change is classified as docs-only.
func TestExposureCodePassingAsDocs(t *testing.T) {
	srv := gitea.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	u := srv.NewUser(t, "docsonly")
	repo := srv.NewRepo(t, u, "docsonly")
	goSHA, err := repo.PutFile(ctx, forge.FileChange{Path: "cmd/tool/main.go", Branch: "main", Message: "code",
		Content: []byte("package main\n\nfunc main() {}\n")})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		// change commits the pull request's change on branch.
		change func(t *testing.T, branch string)
		want   []string // files the diff must name (at least)
	}{
		{
			// The added line "++ b/docs/x.md" reads "+++ b/docs/x.md" in
			// the diff, a new-file header to a parser that ignores hunks.
			name: "added line that reads as a header",
			change: func(t *testing.T, branch string) {
				_, err := repo.PutFile(ctx, forge.FileChange{Path: "cmd/tool/main.go", SHA: goSHA, Branch: branch, Message: "docs",
					Content: []byte("package main\n\nfunc main() {\n\tprintln(`\n++ b/docs/x.md\n`)\n}\n")})
				if err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"cmd/tool/main.go"},
		},
		{
			// Moving code under docs/ deletes it from the build.
			name: "code renamed into docs",
			change: func(t *testing.T, branch string) {
				renameFile(t, ctx, srv, u, repo, branch, "cmd/tool/main.go", "docs/main.md", goSHA)
			},
			want: []string{"cmd/tool/main.go", "docs/main.md"},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			branch := fmt.Sprintf("docs-%d", i)
			if _, err := repo.CreateBranch(ctx, branch, "main"); err != nil {
				t.Fatal(err)
			}
			tt.change(t, branch)
			pr, err := repo.CreatePull(ctx, forge.NewPull{Title: "Docs only", Head: branch, Base: "main"})
			if err != nil {
				t.Fatal(err)
			}
			diff, err := repo.PullDiff(ctx, pr.Number)
			if err != nil {
				t.Fatal(err)
			}
			files := patch.Files(diff)
			if patch.NonCode(files) {
				t.Errorf("a code change passes as docs-only: files %q\n%s", files, diff)
			}
			for _, w := range tt.want {
				if !contains(files, w) {
					t.Errorf("files %q lack %s\n%s", files, w, diff)
				}
			}
		})
	}
}

// renameFile moves from to to on branch in one commit, through the forge's
// contents API (the client has no rename).
func renameFile(t *testing.T, ctx context.Context, srv *forgetest.Server, u forgetest.User, repo *forge.RepoClient, branch, from, to, sha string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"branch": branch, "message": "move to docs",
		"files": []map[string]string{{"operation": "update", "path": to, "from_path": from, "sha": sha,
			"content": base64.StdEncoding.EncodeToString([]byte("package main\n\nfunc main() {}\n"))}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/api/v1/repos/"+repo.Slug()+"/contents", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+u.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("rename %s to %s: HTTP %d", from, to, resp.StatusCode)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

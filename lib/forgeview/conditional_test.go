package forgeview_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
)

// TestListsAreNotConditional records why the view refreshes with full
// lists: the forge's API list endpoints carry neither an ETag nor a
// Last-Modified, and answer a conditional request in full. Should a
// future forge honour them, this fails and the view can revalidate.
func TestListsAreNotConditional(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a forge")
	}
	srv := forgetest.Start(t)
	p := srv.NewProject(t, "cond")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := p.Repo.CreateIssue(ctx, forge.NewIssue{Title: "one"}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"pulls?state=open", "issues?state=open&type=issues"} {
		url := srv.URL + "/api/v1/repos/" + p.Repo.Slug() + "/" + path
		get := func(h map[string]string) *http.Response {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "token "+p.Owner.Token)
			for k, v := range h {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}
		first := get(nil)
		if first.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, first.Status)
		}
		etag, lm := first.Header.Get("ETag"), first.Header.Get("Last-Modified")
		if etag != "" || lm != "" {
			t.Errorf("GET %s carries ETag %q, Last-Modified %q: the view could revalidate", path, etag, lm)
		}
		again := get(map[string]string{"If-None-Match": `"x"`, "If-Modified-Since": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)})
		if again.StatusCode != http.StatusOK {
			t.Errorf("conditional GET %s: %s, want the full list (200)", path, again.Status)
		}
	}
}

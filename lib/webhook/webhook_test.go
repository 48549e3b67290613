package webhook_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/webhook"
)

type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) Trigger(project, role string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, project+"/"+role)
	return true
}

var secret = []byte("s3cret")

const labelled = `{"action":"label_updated","number":12,"issue":{"number":12},"repository":{"full_name":"Owner/Alpha"}}`

func TestHandler(t *testing.T) {
	cases := []struct {
		name    string
		method  string
		headers map[string]string
		body    string
		status  int
		want    []string
	}{
		{"forgejo label event", "POST", map[string]string{"X-Forgejo-Event": "issues", "X-Forgejo-Event-Type": "issue_label", "X-Forgejo-Signature": webhook.Sign(secret, []byte(labelled))},
			labelled, http.StatusAccepted, []string{"alpha/dev"}},
		{"gitea pull request", "POST", map[string]string{"X-Gitea-Event": "pull_request", "X-Gitea-Signature": webhook.Sign(secret, []byte(labelled))},
			labelled, http.StatusAccepted, []string{"alpha/review", "alpha/dev"}},
		{"unsigned", "POST", map[string]string{"X-Gitea-Event": "issues"}, labelled, http.StatusUnauthorized, nil},
		{"bad signature", "POST", map[string]string{"X-Gitea-Event": "issues", "X-Gitea-Signature": webhook.Sign([]byte("other"), []byte(labelled))},
			labelled, http.StatusUnauthorized, nil},
		{"garbage signature", "POST", map[string]string{"X-Gitea-Event": "issues", "X-Gitea-Signature": "zz"}, labelled, http.StatusUnauthorized, nil},
		{"signed garbage", "POST", map[string]string{"X-Gitea-Event": "issues", "X-Gitea-Signature": webhook.Sign(secret, []byte("{"))}, "{", http.StatusBadRequest, nil},
		{"unknown repo", "POST", map[string]string{"X-Gitea-Event": "issues", "X-Gitea-Signature": webhook.Sign(secret, []byte(`{"repository":{"full_name":"x/y"}}`))},
			`{"repository":{"full_name":"x/y"}}`, http.StatusNoContent, nil},
		{"uninteresting event", "POST", map[string]string{"X-Gitea-Event": "wiki", "X-Gitea-Signature": webhook.Sign(secret, []byte(labelled))},
			labelled, http.StatusNoContent, nil},
		{"GET", "GET", nil, "", http.StatusMethodNotAllowed, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			var observed []string
			h, err := webhook.New(webhook.Options{
				Secret: secret, Projects: map[string][]string{"owner/alpha": {"alpha"}},
				Trigger: rec, Log: logx.Nop(),
				Observe: func(typ, result string) { observed = append(observed, typ+":"+result) },
			})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(tc.method, webhook.Path, strings.NewReader(tc.body))
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d", w.Code, tc.status)
			}
			if strings.Join(rec.got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("triggered %v, want %v", rec.got, tc.want)
			}
		})
	}
}

func TestNewRequiresSecret(t *testing.T) {
	if _, err := webhook.New(webhook.Options{Trigger: &recorder{}}); err == nil {
		t.Fatal("empty secret accepted")
	}
}

func TestBodyLimit(t *testing.T) {
	h, _ := webhook.New(webhook.Options{Secret: secret, Trigger: &recorder{}, MaxBody: 10, Log: logx.Nop()})
	req := httptest.NewRequest("POST", webhook.Path, strings.NewReader(labelled))
	req.Header.Set("X-Gitea-Signature", webhook.Sign(secret, []byte(labelled)))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d", w.Code)
	}
}

func FuzzParseEvent(f *testing.F) {
	f.Add("issue_label", []byte(labelled))
	f.Add("pull_request", []byte(`{"number":3,"pull_request":{"number":3},"repository":{"full_name":"a/b"}}`))
	f.Add("status", []byte(`{"sha":"abc","state":"success","repository":{"full_name":"a/b"}}`))
	f.Fuzz(func(t *testing.T, typ string, body []byte) {
		ev, err := webhook.ParseEvent(typ, body)
		if err == nil && (!strings.Contains(ev.Repo, "/") || ev.Type == "") {
			t.Fatalf("accepted event without repo or type: %+v", ev)
		}
	})
}

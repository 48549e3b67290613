package webhook_test

import (
	"io"
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

const opsEvent = `{"action":"closed","number":3,"pull_request":{"number":3,"merged":true},"repository":{"full_name":"owner/alpha-ops"}}`

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
		// Any event of an ops repository wakes the roles that watch it
		// (the vault dispatcher, the sprint filer), and no project role.
		{"ops repository event", "POST", map[string]string{"X-Forgejo-Event": "pull_request", "X-Forgejo-Signature": webhook.Sign(secret, []byte(opsEvent))},
			opsEvent, http.StatusAccepted, []string{"alpha/vault", "alpha/filer"}},
		{"ops repository, uninteresting event", "POST", map[string]string{"X-Forgejo-Event": "wiki", "X-Forgejo-Signature": webhook.Sign(secret, []byte(opsEvent))},
			opsEvent, http.StatusNoContent, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			var observed []string
			h, err := webhook.New(webhook.Options{
				Secret: secret, Projects: map[string][]string{"owner/alpha": {"alpha"}},
				Ops:     map[string][]string{"Owner/Alpha-Ops": {"alpha"}},
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

// failingBody yields n bytes, then err; it counts the reads.
type failingBody struct {
	n     int
	err   error
	reads int
}

func (b *failingBody) Read(p []byte) (int, error) {
	b.reads++
	if b.n == 0 {
		return 0, b.err
	}
	k := min(len(p), b.n)
	for i := range k {
		p[i] = ' '
	}
	b.n -= k
	return k, nil
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestBodyLimit(t *testing.T) {
	tests := []struct {
		name      string
		body      *failingBody
		length    int64
		want      int
		wantReads bool
	}{
		{name: "declared length over the cap is refused unread", body: &failingBody{n: 20, err: io.EOF}, length: 20,
			want: http.StatusRequestEntityTooLarge},
		{name: "undeclared length cut at the cap", body: &failingBody{n: 20, err: io.EOF}, length: -1,
			want: http.StatusRequestEntityTooLarge, wantReads: true},
		{name: "read timeout", body: &failingBody{n: 3, err: timeoutErr{}}, length: 8,
			want: http.StatusRequestTimeout, wantReads: true},
		{name: "body cut short", body: &failingBody{n: 3, err: io.ErrUnexpectedEOF}, length: 8,
			want: http.StatusBadRequest, wantReads: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := webhook.New(webhook.Options{Secret: secret, Trigger: &recorder{}, MaxBody: 10, Log: logx.Nop()})
			req := httptest.NewRequest("POST", webhook.Path, tt.body)
			req.ContentLength = tt.length
			req.Header.Set("X-Gitea-Signature", webhook.Sign(secret, []byte(labelled)))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tt.want {
				t.Errorf("status %d, want %d", w.Code, tt.want)
			}
			if (tt.body.reads > 0) != tt.wantReads {
				t.Errorf("%d reads of the body", tt.body.reads)
			}
		})
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

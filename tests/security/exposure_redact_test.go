package security

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/tests/internal/rig"
)

// TestExposureEscapedSecrets runs the daemon against a forge that rejects
// the dev bot's token and echoes it back, raw and escaped, in its error.
// The error travels into the logs, the ledger and /status; the attack
// works when the token shows there in any form: raw, JSON-escaped (as
// zerolog and encoding/json write it) or URL-escaped.
func TestExposureEscapedSecrets(t *testing.T) {
	const secret = `tok"en\va%lue+s p&<x>`
	var mu sync.Mutex
	seen := false
	forgeSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/version" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"version":"1.26.0"}`))
			return
		}
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "token ")
		mu.Lock()
		seen = seen || tok == secret
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "rejected %s q=%s p=%s j=%s", tok, url.QueryEscape(tok), url.PathEscape(tok), jsonInner(tok, true))
	}))
	defer forgeSrv.Close()

	in := newInstall(t, forgeSrv.URL, "FORGE_TOKEN="+secret, "AGENT_ROLES=dev", "CLAUDE_BIN=/bin/true")
	p := start(t, in, []string{"DISINTO_STATUS_LISTEN=127.0.0.1:0"}, "--listen", "127.0.0.1:0")
	a := p.AwaitAddrs(t)

	// The dev job runs at start; its failed tick reaches the ledger and the
	// job's last error.
	var status string
	rig.Await(t, "the failed dev tick in /status", time.Minute, func() string {
		if p.Exited() {
			return "the daemon exited"
		}
		return ""
	}, func() bool {
		code, body, err := get("http://"+a.StatusAddr()+"/status", "")
		var rep struct {
			Jobs []struct {
				LastError string `json:"last_error"`
			} `json:"jobs"`
			Recent []json.RawMessage `json:"recent"`
		}
		if err != nil || code != http.StatusOK || json.Unmarshal([]byte(body), &rep) != nil {
			return false
		}
		status = body
		return len(rep.Recent) > 0 && len(rep.Jobs) > 0 && rep.Jobs[0].LastError != ""
	})
	statusCLI, err := run(in, nil, "status", "--json")
	if err != nil {
		t.Fatalf("disinto status: %v\n%s", err, statusCLI)
	}
	_ = p.Stop(t, 30*time.Second)
	mu.Lock()
	if !seen {
		t.Fatal("the forge never saw the token; the test proves nothing")
	}
	mu.Unlock()

	sinks := map[string]string{"/status": status, "disinto status --json": statusCLI, "daemon output": p.Out.String()}
	err = filepath.WalkDir(in.Data, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		sinks[strings.TrimPrefix(path, in.Data+"/")] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The error must have reached each kind of sink, or the test proves
	// nothing about it.
	for _, must := range []string{"/status", "ledger/runs.jsonl", "logs/daemon.log", "daemon output"} {
		if !strings.Contains(sinks[must], "rejected") {
			t.Errorf("%s does not show the forge's error:\n%s", must, sinks[must])
		}
	}
	for name, text := range sinks {
		for form, s := range secretForms(secret) {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the token %s: %q", name, form, s)
			}
		}
	}
}

// secretForms are the ways a secret can be written to a log or a JSON file.
func secretForms(s string) map[string]string {
	forms := map[string]string{
		"raw":                      s,
		"JSON-escaped":             jsonInner(s, false),
		"JSON-escaped (HTML-safe)": jsonInner(s, true),
		"query-escaped":            url.QueryEscape(s),
		"path-escaped":             url.PathEscape(s),
	}
	for _, f := range []string{"query-escaped", "path-escaped"} {
		forms[f+" (lower-case hex)"] = lowerHex(forms[f])
	}
	return forms
}

// jsonInner is s as a JSON string without the quotes.
func jsonInner(s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(s)
	out := strings.TrimSpace(b.String())
	return out[1 : len(out)-1]
}

// lowerHex rewrites the %XX escapes of s with lower-case hex digits.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = bytes.ToLower(b[i+1 : i+2])[0], bytes.ToLower(b[i+2 : i+3])[0]
		}
	}
	return string(b)
}

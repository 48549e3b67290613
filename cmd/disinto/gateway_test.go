package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/gateway"
)

// TestGatewayCommand: `disinto gateway` serves the backends of the
// project files to the daemons that hold its admin token, and refuses to
// start without one.
func TestGatewayCommand(t *testing.T) {
	var seen http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"usage":{"input_tokens":7,"output_tokens":3}}`)
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "projects", "p.toml"), "name = \"p\"\nrepo = \"o/p\"\n")
	const token = "shared-gateway-token-0123456789"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	common := []string{"--projects-dir", filepath.Join(dir, "projects"), "--env-file", filepath.Join(dir, "none"), "--data-dir", filepath.Join(dir, "data")}
	env := []string{"ANTHROPIC_BASE_URL=" + up.URL, "ANTHROPIC_API_KEY=sk-ant-api03-gateway-held"}

	if code, _, errOut := runCLI(t, env, append([]string{"gateway", "--listen", addr}, common...)...); code == 0 || !strings.Contains(errOut, "DISINTO_GATEWAY_TOKEN") {
		t.Fatalf("without a token: exit %d, %s", code, errOut)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		done <- run(ctx, append([]string{"gateway", "--listen", addr}, common...), io.Discard, &errb, append(env, gateway.TokenEnv+"="+token))
	}()
	t.Cleanup(func() { cancel(); <-done })
	url := "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway never answered: %v\n%s", err, errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	l, err := (&gateway.Remote{URL: url, Token: token}).Grant(gateway.Grant{Project: "p", Role: "dev", Backend: "anthropic"})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", l.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || seen.Get("X-Api-Key") != "sk-ant-api03-gateway-held" {
		t.Fatalf("relayed %d with key %q", resp.StatusCode, seen.Get("X-Api-Key"))
	}
	if u := l.Close(); u.InputTokens != 7 || u.OutputTokens != 3 {
		t.Errorf("usage %+v", u)
	}
}

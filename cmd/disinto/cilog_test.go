package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
)

// The dev agent of a woodpecker project asks the configured Woodpecker
// server, with the token as a bearer header; a project without CI asks
// nothing.
func TestCILogSource(t *testing.T) {
	var auth atomic.Value
	wp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		if r.URL.Path != "/api/repos/9/pipelines" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("[]"))
	}))
	defer wp.Close()
	fc, err := forge.New(forge.Options{URL: "http://forge.invalid", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Woodpecker: config.Woodpecker{Server: wp.URL, Token: "wp-token"}}
	p := &config.Project{Name: "p", File: "p.toml", CI: config.CI{System: config.CIWoodpecker, WoodpeckerRepoID: 9}}
	src, err := ciLogSource(cfg, p, fc.Repo("o", "r"))
	if err != nil {
		t.Fatal(err)
	}
	cs := forge.CombinedStatus{SHA: "abc", State: forge.CIFailure, Statuses: []forge.CommitStatus{{Context: "ci", State: forge.CIFailure}}}
	if l, err := src.Fetch(context.Background(), cs); err != nil || l.Found() {
		t.Fatalf("log %+v, err %v", l, err)
	}
	if auth.Load() != "Bearer wp-token" {
		t.Fatalf("Woodpecker asked with %q", auth.Load())
	}

	none := &config.Project{Name: "q", CI: config.CI{System: config.CINone}}
	if src, err := ciLogSource(cfg, none, fc.Repo("o", "r")); err != nil || src != nil {
		t.Fatalf("project without CI: %v, %v", src, err)
	}
	cfg.Woodpecker.Server = ""
	if _, err := ciLogSource(cfg, p, fc.Repo("o", "r")); err == nil || !strings.Contains(err.Error(), "project p (p.toml)") {
		t.Fatalf("no server: %v", err)
	}
}

package main

import (
	"testing"
	"time"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/config"
)

// TestDevLimitsFromProjectFile: every [limits] key reaches the dev agent.
func TestDevLimitsFromProjectFile(t *testing.T) {
	file := "name = \"a\"\nrepo = \"o/a\"\n[limits]\nci_timeout = \"2s\"\nreview_timeout = \"1m\"\nci_fix_attempts = 2\n" +
		"review_rounds = 1\nrebase_rounds = 4\nmerge_attempts = 6\nci_log_bytes = 1024\nin_flight = 3\n" +
		"[agents.llama]\nbase_url = \"http://llama:8080\"\nmodel = \"q\"\ncompact_pct = 45\n"
	cfg, err := config.Parse(map[string][]byte{"a.toml": []byte(file)}, config.NewEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	got := devLimits(cfg, cfg.Projects[0])
	want := dev.Limits{CIFixes: 2, ReviewRounds: 1, Rebases: 4, MergeAttempts: 6, CITimeout: 2 * time.Second,
		ReviewTimeout: time.Minute, InFlight: 3, SessionTimeout: cfg.Claude.Timeout, MaxTurns: 200}
	if got != want {
		t.Errorf("limits = %+v\nwant %+v", got, want)
	}
}

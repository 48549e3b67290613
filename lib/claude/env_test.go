package claude_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
)

func TestEnvironmentDropsSecrets(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	daemonEnv := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "USER=agent", "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
		"IS_SANDBOX=1", "CLAUDE_CONFIG_DIR=/daemon/config", "GIT_AUTHOR_NAME=dev-bot",
		// Vault-only and other secrets the daemon holds: none may pass.
		"GITHUB_TOKEN=ghp_vaultonly0001", "CLAWHUB_TOKEN=clawhub-vaultonly-0002", "CADDY_SSH_KEY=ssh-vaultonly-0003",
		"FORGE_TOKEN=forge-token-0004", "FORGE_REVIEW_TOKEN=review-token-0005", "WOODPECKER_TOKEN=wp-0006",
		"ANTHROPIC_API_KEY=sk-ant-daemon-key-0007", "ANTHROPIC_BASE_URL=https://daemon.invalid",
		"DISINTO_SECRET_THING=nope-0008", "AWS_SECRET_ACCESS_KEY=aws-0009",
	}
	e := newFakeExec(t, func(o *claude.Options) {
		o.BaseEnv = daemonEnv
		o.ConfigDir = "/shared/claude/config"
		o.DenyEnv = []string{"GITHUB_TOKEN", "CLAWHUB_TOKEN"}
		o.Backends = []claude.Backend{
			{Name: "anthropic", APIKey: "sk-ant-backend-key-1", MaxSessions: 1},
			{Name: "llama", BaseURL: "http://llama:8081", APIKey: "sk-no-key-required", Model: "qwen", MaxSessions: 1,
				Env: map[string]string{"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "60"}},
		}
	})
	record := filepath.Join(t.TempDir(), "record.json")
	inv, _ := fakeInv(t, claudetest.FakeResult, map[string]string{
		claudetest.FakeRecord: record, "DISINTO_PHASE_FILE": "/data/state/p/issue-1/phase",
	})
	inv.Backend = "llama"
	if _, err := e.Run(context.Background(), inv); err != nil {
		t.Fatal(err)
	}
	var rec claudetest.FakeRecordData
	readJSON(t, record, &rec)
	got := map[string]string{}
	for _, kv := range rec.Env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	all := strings.Join(rec.Env, "\n")
	for _, secret := range []string{"ghp_vaultonly0001", "clawhub-vaultonly-0002", "ssh-vaultonly-0003", "forge-token-0004",
		"review-token-0005", "wp-0006", "sk-ant-daemon-key-0007", "daemon.invalid", "nope-0008", "aws-0009", "sk-ant-backend-key-1"} {
		if strings.Contains(all, secret) {
			t.Errorf("secret value %q reached claude's environment", secret)
		}
	}
	want := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": home, "USER": "agent", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
		"IS_SANDBOX": "1", "CLAUDE_CONFIG_DIR": "/shared/claude/config", "GIT_AUTHOR_NAME": "dev-bot",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
		"CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1", "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
		"ANTHROPIC_BASE_URL": "http://llama:8081", "ANTHROPIC_API_KEY": "sk-no-key-required",
		"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "60", "DISINTO_PHASE_FILE": "/data/state/p/issue-1/phase",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("env %s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && !strings.HasPrefix(k, "CLAUDETEST_") {
			t.Errorf("unexpected variable %s in claude's environment", k)
		}
	}
	if i := slices.Index(rec.Args, "--model"); i < 0 || rec.Args[i+1] != "qwen" {
		t.Errorf("backend model not passed: %q", rec.Args)
	}
}

func TestInvocationEnvCannotOverrideReserved(t *testing.T) {
	t.Parallel()
	e := newFakeExec(t, func(o *claude.Options) { o.DenyEnv = []string{"GITHUB_TOKEN"} })
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CONFIG_DIR", "PATH", "GITHUB_TOKEN", "A=B"} {
		inv, _ := fakeInv(t, claudetest.FakeResult, map[string]string{k: "x"})
		if _, err := e.Run(context.Background(), inv); !errors.Is(err, claude.ErrInvalid) {
			t.Errorf("Env[%s]: err = %v, want ErrInvalid", k, err)
		}
	}
}

func TestBackendSemaphoreBoundsConcurrency(t *testing.T) {
	t.Parallel()
	obs := &observer{}
	e := newFakeExec(t, func(o *claude.Options) {
		o.Backends = []claude.Backend{{Name: "llama", BaseURL: "http://llama", MaxSessions: 2}}
		o.IdleGrace = 200 * time.Millisecond
		o.Observer = obs
	})
	// Each fake lingers after its result until the idle grace kills it,
	// so every run holds its slot for a while; pid files show the real
	// processes alive at the same time.
	pidDir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	maxAlive := 0
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inv, _ := fakeInv(t, claudetest.FakeHangAfterResult, map[string]string{
				claudetest.FakePIDFile: filepath.Join(pidDir, string(rune('a'+i))),
			})
			inv.Backend = "llama"
			_, err := e.Run(context.Background(), inv)
			errs <- err
		}()
	}
	// Watch the processes themselves until all runs are over.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for watching := true; watching; {
		select {
		case <-done:
			watching = false
		case <-time.After(5 * time.Millisecond):
		}
		n := 0
		files, _ := filepath.Glob(filepath.Join(pidDir, "*"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
				if pid, _ := strconv.Atoi(string(b)); len(claudetest.GroupMembers(pid)) > 0 {
					n++
				}
			}
		}
		maxAlive = max(maxAlive, n)
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("run: %v", err)
		}
	}
	if maxAlive > 2 || obs.max > 2 {
		t.Errorf("saw %d processes / %d sessions at once, want at most 2", maxAlive, obs.max)
	}
	if obs.max != 2 || maxAlive < 1 {
		t.Errorf("sessions never overlapped (max %d, processes %d); the test proves nothing", obs.max, maxAlive)
	}
	waited := 0
	for _, w := range obs.waits {
		if w > 0 {
			waited++
		}
	}
	if len(obs.waits) != 5 || waited < 3 {
		t.Errorf("slot waits %v: want 5 reports, at least 3 of them real waits", obs.waits)
	}
}

func TestSlotWaitHonoursContext(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	e := newFakeExec(t, func(o *claude.Options) {
		o.Backends = []claude.Backend{{Name: "llama", MaxSessions: 1}}
		o.Observer = &observer{started: started}
	})
	holdCtx, stopHold := context.WithCancel(context.Background())
	held := make(chan error, 1)
	go func() {
		inv, _ := fakeInv(t, claudetest.FakeForever, nil)
		_, err := e.Run(holdCtx, inv)
		held <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	inv, _ := fakeInv(t, claudetest.FakeResult, nil)
	if _, err := e.Run(ctx, inv); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting run: err = %v, want DeadlineExceeded", err)
	}
	stopHold()
	if err := <-held; !errors.Is(err, context.Canceled) {
		t.Errorf("holding run: err = %v, want Canceled", err)
	}
}

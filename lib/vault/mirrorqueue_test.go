package vault_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/vault"
)

// isolatedGit is git without the machine's configuration.
var isolatedGit = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}

// gitIn runs git in dir and returns its trimmed output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), isolatedGit...)
	cmd.Env = append(cmd.Env, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// project makes a repository at dir with n commits on main and returns
// their ids, oldest first.
func project(t *testing.T, dir string, n int) []string {
	t.Helper()
	gitIn(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	var shas []string
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte{byte('a' + i)}, 0o600); err != nil {
			t.Fatal(err)
		}
		gitIn(t, dir, "add", "f")
		gitIn(t, dir, "commit", "-q", "-m", "c")
		shas = append(shas, gitIn(t, dir, "rev-parse", "HEAD"))
	}
	return shas
}

// TestMirrorPushSurvivesRestart: a push to a mirror that is down fails,
// waits out its backoff (not run before, even by a restarted daemon, whose
// queue is read back from the data dir), and is pushed exactly once when
// the mirror is back; the older push queued behind it is carried by it.
func TestMirrorPushSurvivesRestart(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := t.Context()
	dir := t.TempDir()
	src := filepath.Join(dir, "project")
	shas := project(t, src, 2)
	mirror := filepath.Join(dir, "mirror.git") // absent: the mirror is down
	older, newer := vault.MirrorAction("o/p", "backup", shas[0], ""), vault.MirrorAction("o/p", "backup", shas[1], "")
	if _, err := r.requester().RequestAction(ctx, newer); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	queueFile := filepath.Join(dir, "data", "vault", "p", "mirror-queue.json")
	daemon := func(name string) *vault.Dispatcher {
		q, err := vault.OpenMirrorQueue(queueFile)
		if err != nil {
			t.Fatal(err)
		}
		p := vault.NewMirrorPusher(vault.MirrorPusherOptions{Mirrors: map[string]string{"backup": mirror},
			Git: git.New(git.Options{Env: isolatedGit}), SourceURL: src, Clone: filepath.Join(dir, "clone"),
			Attempts: 2, Backoff: time.Millisecond, Queue: q, Now: func() time.Time { return now }})
		return r.dispatcher(filepath.Join(dir, name), vault.Executors{By: map[string]vault.Executor{vault.MirrorFormula: p}}, nil)
	}

	es, err := daemon("first").Cycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, es, newer.ID); e.State != vault.StateReady || !strings.Contains(e.Reason, "run again later") {
		t.Fatalf("after a failed push: %+v", e)
	}
	if _, ok := r.result(newer.ID); ok {
		t.Fatal("a failed push to a mirror that is down was recorded as the outcome")
	}

	// Restarted, before the backoff ran out: nothing runs.
	second := daemon("second")
	es, err = second.Cycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, es, newer.ID); e.State != vault.StatePending || !strings.Contains(e.Reason, "failed 1 times") || !strings.Contains(e.Reason, "next try at") {
		t.Fatalf("after the restart: %+v", e)
	}

	// The mirror is back and the backoff over: pushed, once.
	gitIn(t, dir, "init", "-q", "--bare", mirror)
	gitIn(t, mirror, "config", "core.logAllRefUpdates", "always")
	now = now.Add(vault.MirrorRetryMin)
	for range 2 {
		if _, err := daemon("second").Cycle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := gitIn(t, mirror, "rev-parse", "refs/heads/main"); got != shas[1] {
		t.Fatalf("mirror main at %s, want %s", got, shas[1])
	}
	if log := gitIn(t, mirror, "reflog", "show", "refs/heads/main"); strings.Count(log, "\n")+1 != 1 {
		t.Fatalf("the mirror's main moved more than once:\n%s", log)
	}
	if res, ok := r.result(newer.ID); !ok || res.Status != vault.StatusSucceeded {
		t.Fatalf("result %+v, %v", res, ok)
	}

	// A push of an older commit, asked for late, is carried by the newer
	// one: it succeeds without moving the mirror back or failing on it.
	if _, err := r.requester().RequestAction(ctx, older); err != nil {
		t.Fatal(err)
	}
	if _, err := daemon("second").Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	if res, ok := r.result(older.ID); !ok || res.Status != vault.StatusSucceeded || !strings.Contains(res.Logs, "carried by") {
		t.Fatalf("older push: %+v, %v", res, ok)
	}
	if log := gitIn(t, mirror, "reflog", "show", "refs/heads/main"); strings.Count(log, "\n") != 0 {
		t.Fatalf("the mirror's main moved again:\n%s", log)
	}
	q, err := vault.OpenMirrorQueue(queueFile)
	if err != nil || len(q.List()) != 0 {
		t.Fatalf("queue after the pushes: %+v, %v", q.List(), err)
	}
}

// TestDropPendingAction: an operator drops an action that keeps failing;
// it is recorded as dropped and never runs; dropping it again, or one
// that does not exist, is refused.
func TestDropPendingAction(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := t.Context()
	if _, err := r.requester().Request(ctx, triage("a5")); err != nil {
		t.Fatal(err)
	}
	d := r.dispatcher(t.TempDir(), &countingRunner{}, nil)
	if _, err := d.Drop(ctx, "a5", r.admin.Login, "not wanted"); err != nil {
		t.Fatal(err)
	}
	run := &countingRunner{}
	es, err := r.dispatcher(t.TempDir(), run, nil).Cycle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, es, "a5"); e.Status() != string(vault.StatusDropped) || !strings.Contains(e.Detail(), "dropped by "+r.admin.Login) || run.count("a5") != 0 {
		t.Fatalf("dropped action: %+v %q, runs %d", e, e.Detail(), run.count("a5"))
	}
	if _, err := d.Drop(ctx, "a5", r.admin.Login, "again"); err == nil || !strings.Contains(err.Error(), "has a result") {
		t.Fatalf("dropped twice: %v", err)
	}
	if _, err := d.Drop(ctx, "nope", r.admin.Login, ""); err == nil || !strings.Contains(err.Error(), "no such action") {
		t.Fatalf("dropped a missing action: %v", err)
	}
}

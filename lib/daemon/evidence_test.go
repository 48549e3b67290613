package daemon

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/evidence"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// TestEvidenceOnceADay: the daemon's evidence chore writes a project's
// evidence at its first look of a UTC day and not again that day, even
// when the forge moved; the next day's first look writes what changed.
func TestEvidenceOnceADay(t *testing.T) {
	if testing.Short() {
		t.Skip("real Gitea")
	}
	ctx := t.Context()
	srv := forgetest.Start(t)
	p := srv.NewProject(t, "evid")
	dev := p.Dev.Client.Repo(p.Repo.Owner(), p.Repo.Name())
	if _, err := dev.CreateBranch(ctx, "fix", "main"); err != nil {
		t.Fatal(err)
	}
	// Both commits are pushed before the pull request opens (a push to
	// the head of an open pull request is slow on a loaded forge); their
	// statuses come one a look.
	push := func(path string) string {
		t.Helper()
		if err := dev.CreateFiles(ctx, "fix", "add "+path, []forge.NewFile{{Path: path, Content: []byte("x\n")}}); err != nil {
			t.Fatal(err)
		}
		b, err := dev.GetBranch(ctx, "fix")
		if err != nil {
			t.Fatal(err)
		}
		return b.SHA
	}
	red := func(sha string) {
		t.Helper()
		if err := dev.CreateStatus(ctx, sha, forge.CommitStatus{Context: "ci", State: forge.CIFailure}); err != nil {
			t.Fatal(err)
		}
	}
	first, second := push("a.txt"), push("b.txt")
	if _, err := dev.CreatePull(ctx, forge.NewPull{Title: "Fix", Head: "fix", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	red(first)
	opsForge := srv.NewRepo(t, p.Owner, "evid-ops")
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: srv.URL, Username: p.Owner.Login, Password: p.Owner.Password}})
	name, email := git.Identity(p.Owner.Login)
	repo := ops.Open(ops.Options{Git: g, URL: srv.URL + "/" + opsForge.Slug() + ".git", Dir: filepath.Join(t.TempDir(), "ops"),
		Name: name, Email: email})
	now := time.Now()
	w := &evidenceWriter{project: "proj", repo: repo, o: evidence.Options{Forge: p.Repo, Reviewer: p.Reviewer.Login},
		file: filepath.Join(t.TempDir(), "evidence.json"), now: func() time.Time { return now }, log: zerolog.Nop()}
	head := func() string {
		b, err := opsForge.GetBranch(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		return b.SHA
	}
	ci := func() string {
		f, err := opsForge.GetFile(ctx, evidence.CIPath, "main")
		if err != nil {
			t.Fatalf("ci.md: %v", err)
		}
		return string(f.Content)
	}
	start := head()
	if err := w.tick(ctx); err != nil {
		t.Fatal(err)
	}
	firstHead := head()
	if firstHead == start || !strings.Contains(ci(), "commits checked: 1; green 0, red 1") {
		t.Fatalf("first look: head %s (was %s), ci.md:\n%s", firstHead, start, ci())
	}
	if _, err := opsForge.GetFile(ctx, evidence.ReviewsPath, "main"); err == nil {
		t.Error("reviews.md was created with no review to tell")
	}

	red(second)
	if err := w.tick(ctx); err != nil {
		t.Fatal(err)
	}
	if h := head(); h != firstHead {
		t.Errorf("a second look the same day wrote again: head %s, was %s", h, firstHead)
	}

	now = now.Add(24 * time.Hour)
	if err := w.tick(ctx); err != nil {
		t.Fatal(err)
	}
	if h := head(); h == firstHead || !strings.Contains(ci(), "commits checked: 2; green 0, red 2") {
		t.Errorf("the next day's look: head %s (was %s), ci.md:\n%s", h, firstHead, ci())
	}
}

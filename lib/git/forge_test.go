package git_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
)

// gitea is the real forge server shared by this package's forge tests; the
// other tests never start it.
var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// TestPushToRealForge pushes over HTTP to a real Gitea with the bot's
// password, as the agents do against Forgejo (which refuses API tokens for
// git), both from the daemon and from a plain `git push` in a worktree.
func TestPushToRealForge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real forge server")
	}
	t.Parallel()
	srv := gitea.Get(t)
	bot := srv.NewUser(t, "dev-bot")
	forgeRepo := srv.NewRepo(t, bot, "project")
	cloneURL := srv.URL + "/" + forgeRepo.Slug() + ".git"
	ctx := t.Context()

	g := newGit(&git.Credentials{URL: srv.URL, Username: bot.Login, Password: bot.Password})
	repo, err := g.EnsureClone(ctx, cloneURL, filepath.Join(t.TempDir(), "clone"), "main")
	if err != nil {
		t.Fatal(err)
	}
	name, email := git.Identity(bot.Login)
	if err := repo.ConfigureIdentity(ctx, name, email); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	if _, err := repo.AddWorktree(ctx, wt, "fix/issue-1", "origin/main"); err != nil {
		t.Fatal(err)
	}
	commitIn(t, wt, "fix.txt", "fixed\n")
	if err := repo.Push(ctx, wt, "fix/issue-1", git.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	head, _ := repo.HeadSHA(ctx, wt)
	br, err := forgeRepo.GetBranch(ctx, "fix/issue-1")
	if err != nil || br.SHA != head {
		t.Fatalf("forge branch = %+v, %v; want %s", br, err, head)
	}
	if got, err := repo.RemoteSHA(ctx, "fix/issue-1"); err != nil || got != head {
		t.Fatalf("RemoteSHA = %q, %v; want %s", got, err, head)
	}

	// A session's checkout holds no credential: its own push is refused,
	// and the forge branch stays where the daemon pushed it.
	ws := filepath.Join(t.TempDir(), "ws")
	if err := repo.Seed(ctx, ws, git.SeedOptions{Branch: "fix/issue-1", Start: "origin/main", RemoteURL: cloneURL, Name: name, Email: email}); err != nil {
		t.Fatal(err)
	}
	commitIn(t, ws, "more.txt", "more\n")
	cmd := exec.Command("git", "push", "origin", "HEAD:refs/heads/fix/issue-1")
	cmd.Dir = ws
	cmd.Env = append(append(os.Environ(), isolatedEnv...), "GIT_TERMINAL_PROMPT=0")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("a push from the session's checkout succeeded:\n%s", out)
	}
	if br, err := forgeRepo.GetBranch(ctx, "fix/issue-1"); err != nil || br.SHA != head {
		t.Fatalf("forge branch after the session's push = %+v, %v; want %s", br, err, head)
	}
	assertNoSecretIn(t, filepath.Join(repo.Dir(), ".git", "config"), bot.Password)
	assertNoSecretIn(t, filepath.Join(ws, ".git", "config"), bot.Password)

	// A wrong password is refused without prompting. The repository is
	// public, so the clone itself needs no credentials; the push does.
	bad := newGit(&git.Credentials{URL: srv.URL, Username: bot.Login, Password: "not-" + bot.Password})
	badRepo, err := bad.EnsureClone(ctx, cloneURL, filepath.Join(t.TempDir(), "c2"), "main")
	if err != nil {
		t.Fatal(err)
	}
	if err := badRepo.ConfigureIdentity(ctx, name, email); err != nil {
		t.Fatal(err)
	}
	wt2 := filepath.Join(t.TempDir(), "wt2")
	if _, err := badRepo.AddWorktree(ctx, wt2, "fix/issue-2", "origin/main"); err != nil {
		t.Fatal(err)
	}
	commitIn(t, wt2, "x.txt", "x\n")
	err = badRepo.Push(ctx, wt2, "fix/issue-2", git.PushOptions{})
	if err == nil {
		t.Fatal("push with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), bot.Password) {
		t.Errorf("error leaks the password: %v", err)
	}
}

func assertNoSecretIn(t *testing.T, path, secret string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) {
		t.Errorf("%s contains the password", path)
	}
}

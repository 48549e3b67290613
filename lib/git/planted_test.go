package git_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/git"
)

// TestPlantedFilterSeesNoPassword: a session can write a filter driver into
// the clone's shared .git/config and a .gitattributes that uses it; the
// daemon's next local command (moving a review worktree to a new head)
// runs the filter, which must not find the bot's password in its
// environment.
func TestPlantedFilterSeesNoPassword(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const password = "planted-filter-must-not-see-this"
	g := newGit(&git.Credentials{URL: "http://forge.invalid:3000", Username: "review-bot", Password: password})
	repo := cloneFixture(t, g, f)
	ctx := t.Context()

	dump := filepath.Join(t.TempDir(), "env.txt")
	f.commit(t, ".gitattributes", "*.txt filter=evil\n", "attributes")
	f.commit(t, "data.txt", "payload\n", "data")
	sh(t, f.seed, nil, "push", "--quiet", "origin", "main")
	sh(t, repo.Dir(), nil, "config", "filter.evil.smudge", "env > "+dump+"; cat")
	sh(t, repo.Dir(), nil, "config", "filter.evil.clean", "cat")

	if err := repo.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	head := sh(t, repo.Dir(), nil, "rev-parse", "origin/main")
	wt := filepath.Join(t.TempDir(), "review")
	if err := repo.AddDetachedWorktree(ctx, wt, head); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dump)
	if err != nil {
		t.Fatalf("the planted filter did not run, so the test proves nothing: %v", err)
	}
	if strings.Contains(string(got), password) {
		t.Fatal("a filter planted in .git/config read the bot's password from a local git command")
	}
}

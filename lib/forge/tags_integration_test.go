package forge_test

import (
	"errors"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// A tag is created on a commit, read back with that commit (the target of
// the annotated tag, not the tag object), and not created a second time.
func TestTags(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Gitea")
	}
	srv := gitea.Get(t)
	ctx := ctxFor(t)
	owner := srv.NewUser(t, "tagger")
	repo := srv.NewRepo(t, owner, "tagged")
	if _, err := repo.GetTag(ctx, "v1.0.0"); !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("a missing tag: %v", err)
	}
	b, err := repo.GetBranch(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	made, err := repo.CreateTag(ctx, "v1.0.0", b.SHA, "Release v1.0.0")
	if err != nil || made.Name != "v1.0.0" || made.SHA != b.SHA {
		t.Fatalf("create: %+v, %v", made, err)
	}
	got, err := repo.GetTag(ctx, "v1.0.0")
	if err != nil || got != made {
		t.Fatalf("read back: %+v, %v; want %+v", got, err, made)
	}
	_, err = repo.CreateTag(ctx, "v1.0.0", b.SHA, "again")
	if !errors.Is(err, forge.ErrConflict) && !errors.Is(err, forge.ErrInvalid) {
		t.Fatalf("create again: %v", err)
	}
}

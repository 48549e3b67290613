package ops_test

import (
	"path/filepath"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// TestLocalReadsWithoutFetching: Local is the primary branch as last
// fetched, nothing before the first sync, and it moves only with a sync
// or an own commit; List names the files of one directory with sizes.
func TestLocalReadsWithoutFetching(t *testing.T) {
	_, u, p := newOpsRepo(t)
	p.Dir = filepath.Join(t.TempDir(), "ops")
	r := open(p)
	ctx := t.Context()
	if _, head, err := r.Local(ctx); head != "" || err != nil {
		t.Fatalf("before the first sync: head %q, %v", head, err)
	}
	if _, err := r.Commit(ctx, "journal", appendLine("journal/a.md", "one\n")); err != nil {
		t.Fatal(err)
	}
	files, head, err := r.Local(ctx)
	if err != nil || head == "" {
		t.Fatalf("after a commit: head %q, %v", head, err)
	}
	list, err := files.List("journal")
	if err != nil || len(list) != 1 || list[0].Path != "journal/a.md" || list[0].Size != 4 {
		t.Fatalf("List(journal) = %+v, %v", list, err)
	}
	if none, err := files.List("nowhere"); err != nil || len(none) != 0 {
		t.Errorf("List(nowhere) = %+v, %v", none, err)
	}
	// Another writer: not seen until a sync.
	if _, err := u.Client.Repo(u.Login, "ops").PutFile(ctx, forge.FileChange{Path: "journal/b.md", Content: []byte("two\n"),
		Branch: "main", Message: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, again, _ := r.Local(ctx); again != head {
		t.Errorf("Local moved without a sync: %s to %s", head, again)
	}
	synced, err := r.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files, now, err := r.Local(ctx)
	if err != nil || now != synced || now == head {
		t.Fatalf("after a sync: head %q (synced %q), %v", now, synced, err)
	}
	if list, _ := files.List("journal/"); len(list) != 2 {
		t.Errorf("after a sync: %+v", list)
	}
}

package forge_test

import (
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
)

// pngBytes is a one-pixel PNG (the forge checks the type by content).
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde" +
	"\x00\x00\x00\x0cIDATx\x9cc\xf8\x0f\x00\x01\x01\x01\x00\x18\xdd\x8d\xb0\x00\x00\x00\x00IEND\xaeB`\x82")

// An image attached to an issue is listed with its name, size and
// download URL; a name that is not a plain file name, or no data, is
// refused before any request.
func TestIssueAttachments(t *testing.T) {
	srv := gitea.Get(t)
	owner := srv.NewUser(t, "owner")
	repo := srv.NewRepo(t, owner, "attach")
	ctx := ctxFor(t)
	i, err := repo.CreateIssue(ctx, forge.NewIssue{Title: "bug", Body: "steps"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := repo.UploadIssueAttachment(ctx, i.Number, "step-1.png", pngBytes)
	if err != nil {
		t.Fatal(err)
	}
	if at.ID == 0 || at.Name != "step-1.png" || at.Size != int64(len(pngBytes)) || !strings.HasPrefix(at.URL, srv.URL) {
		t.Errorf("attachment %+v", at)
	}
	list, err := repo.ListIssueAttachments(ctx, i.Number)
	if err != nil || len(list) != 1 || list[0].ID != at.ID {
		t.Errorf("list %+v, %v", list, err)
	}
	for _, name := range []string{"../x.png", "a/b.png", "", ".hidden.png"} {
		if _, err := repo.UploadIssueAttachment(ctx, i.Number, name, pngBytes); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if _, err := repo.UploadIssueAttachment(ctx, i.Number, "empty.png", nil); err == nil {
		t.Error("empty data accepted")
	}
	if list, _ := repo.ListIssueAttachments(ctx, i.Number); len(list) != 1 {
		t.Errorf("refused uploads reached the forge: %+v", list)
	}
}

package forge

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"regexp"
)

// Attachment is a file attached to an issue: its id, file name, size and
// the URL it downloads from.
type Attachment struct {
	ID   int64
	Name string
	Size int64
	URL  string
}

// MaxAttachment bounds what UploadIssueAttachment sends; the forge's own
// default limit for an attachment is larger.
const MaxAttachment = 8 << 20

// attachmentNameRe is what an attachment's file name may look like: it is
// shown on the issue and is part of its download.
var attachmentNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// UploadIssueAttachment attaches data as the file name to issue n
// (POST /repos/{owner}/{repo}/issues/{n}/assets). name is a plain file
// name; the forge decides from its extension whether it accepts the type
// (images are allowed by default).
func (r *RepoClient) UploadIssueAttachment(ctx context.Context, n int64, name string, data []byte) (Attachment, error) {
	op := fmt.Sprintf("attach %s to %s#%d", name, r.slug, n)
	if !attachmentNameRe.MatchString(name) || path.Base(name) != name {
		return Attachment{}, fmt.Errorf("%s: want a plain file name of letters, digits, '.', '_' or '-'", op)
	}
	if len(data) == 0 || len(data) > MaxAttachment {
		return Attachment{}, fmt.Errorf("%s: %d bytes, want 1 to %d", op, len(data), MaxAttachment)
	}
	a, resp, err := r.c.api(ctx).CreateIssueAttachment(r.owner, r.name, n, bytes.NewReader(data), name)
	if err := r.c.check(op, resp, err); err != nil {
		return Attachment{}, err
	}
	return Attachment{ID: a.ID, Name: a.Name, Size: a.Size, URL: a.DownloadURL}, nil
}

// ListIssueAttachments returns the files attached to issue n itself (not
// to its comments).
func (r *RepoClient) ListIssueAttachments(ctx context.Context, n int64) ([]Attachment, error) {
	as, resp, err := r.c.api(ctx).ListIssueAttachments(r.owner, r.name, n)
	if err := r.c.check(fmt.Sprintf("list attachments of %s#%d", r.slug, n), resp, err); err != nil {
		return nil, err
	}
	out := make([]Attachment, 0, len(as))
	for _, a := range as {
		out = append(out, Attachment{ID: a.ID, Name: a.Name, Size: a.Size, URL: a.DownloadURL})
	}
	return out, nil
}

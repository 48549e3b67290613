package evidence

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/disinto/disinto/lib/text"
)

// readLimit bounds what a prompt shows of one file, which a human may
// have edited past the cap the daemon keeps.
const readLimit = 2 * DefaultMaxBytes

// Text is the evidence files of the ops repository in fsys as a prompt
// shows them, each under its path, a missing one said so; nil fsys means
// there is no ops repository. The text is the files' (untrusted: it
// quotes pull requests and CI contexts).
func Text(fsys fs.FS) string {
	if fsys == nil {
		return "No ops repository is available: there is no evidence.\n"
	}
	var b strings.Builder
	for _, p := range Paths {
		fmt.Fprintf(&b, "### %s\n\n", p)
		data, err := fs.ReadFile(fsys, p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			b.WriteString("Not written yet: its source has had nothing to tell (engagement needs the edge's access log).\n\n")
		case err != nil:
			fmt.Fprintf(&b, "Unreadable: %v\n\n", err)
		default:
			// The files' own headings go one level down, under the path's.
			body := strings.TrimSpace(text.Clip(string(data), readLimit))
			body = strings.ReplaceAll("\n"+body, "\n#", "\n###")[1:]
			b.WriteString(body + "\n\n")
		}
	}
	return b.String()
}

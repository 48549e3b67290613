package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"strings"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// DigestStateFile records, in the .profile repository itself, how much of
// each journal file the digests have covered. It is committed together
// with the lessons it produced, so a digest is counted exactly when its
// lessons landed: a restart, or another daemon acting as the same bot,
// never digests the same entries twice.
const DigestStateFile = "digest.json"

// DefaultDigestBound is how many bytes of journal entries not yet
// digested start a digest: 16 KiB, some sixty runs.
const DefaultDigestBound = 16 << 10

// MaxDigestInput bounds the journal text one digest session reads. A
// larger backlog is digested oldest first over several sessions.
const MaxDigestInput = 48 << 10

// DigestState is the content of DigestStateFile.
type DigestState struct {
	// Digested maps a journal file to the number of its bytes digested.
	Digested map[string]int64 `json:"digested"`
}

// readDigestState reads the state at f; a missing or unreadable file is
// an empty state (everything is then digested once more at worst).
func readDigestState(f ops.Files) (DigestState, error) {
	st := DigestState{Digested: map[string]int64{}}
	data, err := f.Read(DigestStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if json.Unmarshal(data, &st) != nil || st.Digested == nil {
		st.Digested = map[string]int64{}
	}
	return st, nil
}

// encode returns the state as committed.
func (st DigestState) encode() []byte {
	data, _ := json.MarshalIndent(st, "", "  ")
	return append(data, '\n')
}

// journalFiles keeps the day files of a journal listing, oldest first
// (their names are dates).
func journalFiles(files []git.TreeFile) []git.TreeFile {
	var out []git.TreeFile
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".md") && path.Dir(f.Path) == "journal" {
			out = append(out, f)
		}
	}
	return out
}

// Undigested returns how many bytes of files st has not covered. A file
// shorter than what was digested of it was rewritten: all of it counts.
func Undigested(files []git.TreeFile, st DigestState) int64 {
	var n int64
	for _, f := range journalFiles(files) {
		done := st.Digested[f.Path]
		if done > f.Size {
			done = 0
		}
		n += f.Size - done
	}
	return n
}

// DigestInput returns the journal text a digest reads, oldest first and at
// most limit bytes cut at an entry boundary, and the state to commit once
// its lessons landed. It returns "" when nothing is left to digest.
func DigestInput(files []git.TreeFile, st DigestState, read func(string) ([]byte, error), limit int) (string, DigestState, error) {
	next := DigestState{Digested: maps.Clone(st.Digested)}
	if next.Digested == nil {
		next.Digested = map[string]int64{}
	}
	var b strings.Builder
	for _, f := range journalFiles(files) {
		done := next.Digested[f.Path]
		if done > f.Size {
			done = 0
		}
		if done == f.Size {
			continue
		}
		data, err := read(f.Path)
		if err != nil {
			return "", st, fmt.Errorf("read %s: %w", f.Path, err)
		}
		if done > int64(len(data)) {
			done = 0
		}
		part := data[done:]
		room := limit - b.Len()
		if len(part) > room {
			// Stop before the last entry that does not fit whole.
			cut := strings.LastIndex(string(part[:max(room, 0)]), "\n## ")
			switch {
			case cut > 0:
				part = part[:cut]
			case b.Len() == 0:
				// One entry larger than the budget: its start is enough.
				part = part[:room]
			default:
				cut = -1
			}
			if cut < 0 && b.Len() > 0 {
				break
			}
		}
		fmt.Fprintf(&b, "### %s\n\n%s\n\n", f.Path, strings.TrimSpace(string(part)))
		next.Digested[f.Path] = done + int64(len(part))
		if done+int64(len(part)) < int64(len(data)) {
			break // the budget is spent
		}
	}
	return strings.TrimSpace(b.String()), next, nil
}

// covers reports whether st has digested at least what want has, file by
// file: then the lessons of want landed already (another writer won).
func (st DigestState) covers(want DigestState) bool {
	for p, n := range want.Digested {
		if st.Digested[p] < n {
			return false
		}
	}
	return true
}

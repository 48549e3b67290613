package gardener

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/forge"
)

// A judgement that changes nothing (a feature request, an issue the model
// skipped) is remembered with what it was based on, so the session is not
// asked about the same issue again until it changes.

// judgement is one remembered verdict.
type judgement struct {
	Kind Verdict `json:"kind"`
	// Basis is the hash of the issue's title, body and labels.
	Basis string `json:"basis"`
}

// judgedFile keeps the judgements under the gardener's state dir.
type judgedFile struct{ path string }

func (j judgedFile) load() (map[int64]judgement, error) {
	out := map[int64]judgement{}
	err := atomicfile.ReadJSON(j.path, &out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return map[int64]judgement{}, nil // a torn file costs a question, not the run
	}
	return out, nil
}

func (j judgedFile) save(m map[int64]judgement) error {
	if err := os.MkdirAll(filepath.Dir(j.path), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteJSON(j.path, m, 0o600)
}

// basis is what a judgement of i rests on.
func basis(i forge.Issue) string {
	labels := make([]string, 0, len(i.Labels))
	for _, l := range i.Labels {
		labels = append(labels, string(l))
	}
	return BodyHash(i.Title + "\x00" + i.Body + "\x00" + strings.Join(labels, ","))
}

// settled reports whether i was judged to need nothing, as it is now.
func settled(m map[int64]judgement, i forge.Issue) bool {
	j, ok := m[i.Number]
	return ok && (j.Kind == Feature || j.Kind == Skip) && j.Basis == basis(i)
}

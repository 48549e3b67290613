package architect

import (
	"fmt"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
)

// record is what the architect keeps between runs under its state
// directory. Every part of it can be rebuilt from the forge (the hidden
// markers of the architect's comments); it saves requests and sessions,
// never correctness.
type record struct {
	// Fingerprint sums the open sprint pull requests as the last complete
	// run saw them at its start (see fingerprint).
	Fingerprint string `json:"fingerprint,omitempty"`
	// PRs are the sprint pull requests, by number.
	PRs map[int64]*prRecord `json:"prs,omitempty"`
	// Failed are the visions whose last pitch failed, by number.
	Failed map[int64]pitchFailure `json:"failed,omitempty"`
}

// prRecord is what the architect knows of one sprint pull request.
type prRecord struct {
	Vision int64  `json:"vision"`
	Branch string `json:"branch"`
	Stage  Stage  `json:"stage"`
	// Decisions are the ids of the decisions acted on (comment-N,
	// review-N).
	Decisions []string `json:"decisions,omitempty"`
	// Through is the newest human comment a design session answered.
	Through int64 `json:"through,omitempty"`
	// Asked reports that a design session ran since the acceptance.
	Asked bool `json:"asked,omitempty"`
	// Ready is the last design session's word that the sprint is final.
	Ready bool `json:"ready,omitempty"`
	// Status is the merge check last posted, as "<head>:<state>".
	Status string `json:"status,omitempty"`
	// Cleaned reports that a closed or merged sprint's workspace, session
	// and branch are gone.
	Cleaned bool      `json:"cleaned,omitempty"`
	Opened  time.Time `json:"opened,omitzero"`
}

// pitchFailure is a pitch that produced no sprint: it is not tried again
// for the same body before At plus pitchRetry.
type pitchFailure struct {
	Hash string    `json:"hash"`
	At   time.Time `json:"at"`
	Why  string    `json:"why"`
}

// decided reports whether the decision id was acted on.
func (p *prRecord) decided(id string) bool {
	for _, d := range p.Decisions {
		if d == id {
			return true
		}
	}
	return false
}

// storeFile keeps the record in one JSON file, written atomically.
type storeFile struct{ path string }

func (f storeFile) load() (*record, error) {
	// A torn file costs one full run (the forge's markers rebuild it),
	// not a stuck role.
	r, _, err := atomicfile.ReadState[record](f.path)
	if err != nil {
		return nil, fmt.Errorf("architect state: %w", err)
	}
	return r.init(), nil
}

func (r *record) init() *record {
	if r.PRs == nil {
		r.PRs = map[int64]*prRecord{}
	}
	if r.Failed == nil {
		r.Failed = map[int64]pitchFailure{}
	}
	return r
}

func (f storeFile) save(r *record) error { return atomicfile.WriteState(f.path, r) }

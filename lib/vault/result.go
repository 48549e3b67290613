package vault

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// Status is the state of an action's result record.
type Status string

// Result statuses. StatusStarted is the claim: a dispatcher is running the
// action, or died doing so.
const (
	StatusStarted   Status = "started"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusTimeout   Status = "timeout"
	// StatusDropped: an operator dropped the action before it succeeded
	// (`disinto vault drop`); it never runs again.
	StatusDropped Status = "dropped"
)

// maxLogBytes bounds the log tail a result keeps.
const maxLogBytes = 4000

// Result is vault/results/<id>.toml: the claim and then the outcome of the
// one run of an action.
type Result struct {
	ID     string `toml:"id"`
	Status Status `toml:"status"`
	// ExitCode is the run's exit status (meaningful once finished).
	ExitCode int `toml:"exit_code"`
	// ActionSHA256 is the digest of the action file that ran.
	ActionSHA256 string `toml:"action_sha256"`
	// OpsCommit is the ops commit the action was verified at; Approval
	// says how it was approved.
	OpsCommit string `toml:"ops_commit"`
	Approval  string `toml:"approval"`
	// Dispatcher and Claim identify the dispatcher whose claim won.
	Dispatcher string    `toml:"dispatcher"`
	Claim      string    `toml:"claim"`
	Started    time.Time `toml:"started"`
	Finished   time.Time `toml:"finished,omitzero"`
	// Logs is the redacted tail of the run's output.
	Logs string `toml:"logs,omitempty"`
	// Report is the run's validated, redacted structured result.
	Report string `toml:"report,omitempty"`
}

// Encode renders r as its file.
func (r Result) Encode() ([]byte, error) {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(r); err != nil {
		return nil, fmt.Errorf("encode result %s: %w", r.ID, err)
	}
	return b.Bytes(), nil
}

// ParseResult decodes a result file.
func ParseResult(file string, data []byte) (Result, error) {
	var r Result
	if _, err := toml.Decode(string(data), &r); err != nil {
		return Result{}, fmt.Errorf("%s: %w", file, err)
	}
	return r, nil
}

// Done reports whether the record holds an outcome.
func (r Result) Done() bool { return r.Status != StatusStarted }

// digest is the hex SHA-256 of an action file.
func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// tail keeps the last maxLogBytes of s.
func tail(s string) string {
	if len(s) <= maxLogBytes {
		return s
	}
	return "…" + strings.ToValidUTF8(s[len(s)-maxLogBytes:], "")
}

// ErrNoAction: no action of that id is on the primary branch.
var ErrNoAction = errors.New("no such action")

// ErrHasResult: the action ran, or was dropped, already.
var ErrHasResult = errors.New("the action has a result already")

// Drop records that the operator by dropped action id, which has not run:
// a result with status dropped, committed as the vault identity, so that
// no dispatcher ever runs it (a mirror push that keeps failing, an action
// nobody wants any more). An action with a result is left as it is
// (ErrHasResult), a "started" claim included: a run may be under way.
func (d *Dispatcher) Drop(ctx context.Context, id, by, why string) (Result, error) {
	if !ValidID(id) {
		return Result{}, fmt.Errorf("%q is not an action id", id)
	}
	rec := Result{ID: id, Status: StatusDropped, ExitCode: -1, Approval: "dropped by " + by,
		Dispatcher: d.o.Instance, Claim: nonce(), Started: d.o.Now().UTC(), Finished: d.o.Now().UTC(), Logs: why}
	_, err := d.o.Ops.Commit(ctx, "vault: drop "+id+" ("+by+")", func(f ops.Files) ([]git.FileChange, error) {
		act, err := f.Read(ActionPath(id))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w on the primary branch", id, ErrNoAction)
		}
		if err != nil {
			return nil, err
		}
		if have, err := f.Read(ResultPath(id)); err == nil {
			r, _ := ParseResult(ResultPath(id), have)
			return nil, fmt.Errorf("%s: %w (%s)", id, ErrHasResult, r.Status)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		rec.ActionSHA256 = digest(act)
		data, err := rec.Encode()
		if err != nil {
			return nil, err
		}
		return []git.FileChange{{Path: ResultPath(id), Content: data}}, nil
	})
	if err != nil {
		return Result{}, err
	}
	return rec, nil
}

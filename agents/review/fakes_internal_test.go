package review

import (
	"context"
	"errors"
	"io/fs"

	"github.com/disinto/disinto/lib/sandbox"
)

// primaryOnly is a Checkout that serves only the primary branch's files,
// for tests that render prompts without a clone.
type primaryOnly struct{ fsys fs.FS }

var errNoClone = errors.New("no clone in this test")

func (p primaryOnly) Checkout(context.Context, int64, string) (*sandbox.Workspace, error) {
	return nil, errNoClone
}
func (p primaryOnly) Diff(context.Context, string, string) (string, bool, error) {
	return "", false, errNoClone
}
func (p primaryOnly) PrimaryFS(context.Context) (fs.FS, error) { return p.fsys, nil }
func (p primaryOnly) Remove(context.Context, int64) error      { return nil }

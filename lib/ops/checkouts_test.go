package ops_test

import (
	"testing"

	"github.com/disinto/disinto/lib/ops"
)

// TestCheckoutsShareADirectory proves two users of one directory get one
// Repo, and users of two directories two.
func TestCheckoutsShareADirectory(t *testing.T) {
	var c ops.Checkouts
	a := c.Open(ops.Options{Dir: "/data/ops/p/vault-bot"})
	if b := c.Open(ops.Options{Dir: "/data/ops/p/vault-bot"}); a != b {
		t.Error("one directory, two repos")
	}
	if b := c.Open(ops.Options{Dir: "/data/ops/p/dev-bot"}); a == b {
		t.Error("two directories, one repo")
	}
}

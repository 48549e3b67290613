package security

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/tests/internal/rig"
)

// gitea is the server shared by the suite; each test creates its own users
// and repositories.
var gitea forgetest.Shared

func TestMain(m *testing.M) {
	code := forgetest.Main(m, &gitea)
	rig.RemoveBinary()
	os.Exit(code)
}

// testCtx bounds one test's forge, git and model calls.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

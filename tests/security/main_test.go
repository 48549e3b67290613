package security

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge/forgetest"
)

// gitea is the server shared by the suite; each test creates its own users
// and repositories.
var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// testCtx bounds one test's forge, git and model calls.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

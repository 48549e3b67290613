package forge_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge/forgetest"
)

// gitea is the server shared by this package's integration tests; each test
// creates its own users and repositories.
var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

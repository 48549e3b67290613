package security

import (
	"os"
	"testing"

	"github.com/disinto/disinto/lib/forge/forgetest"
)

// gitea is the server shared by the suite; each test creates its own users
// and repositories.
var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

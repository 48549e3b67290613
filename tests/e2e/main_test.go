package e2e

import (
	"os"
	"testing"

	"github.com/disinto/disinto/tests/internal/rig"
)

func TestMain(m *testing.M) {
	code := m.Run()
	rig.RemoveBinary()
	os.Exit(code)
}

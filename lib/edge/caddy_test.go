package edge_test

import (
	"testing"

	"github.com/disinto/disinto/lib/edge/edgetest"
)

func caddyBin(t testing.TB) string { return edgetest.Bin(t) }

func caddyEnv(t testing.TB, secret, statusToken string) []string {
	return edgetest.Env(t, secret, statusToken)
}

package security

import (
	"testing"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/provision"
)

// TestRotationRevokesTokensMintedWithTheBotPassword: whoever learnt a
// bot's password (a leaked env file, a session that read it) can mint
// tokens of their own with basic auth. `disinto init --rotate-tokens` is
// the operator's answer to the leak, so afterwards no token of the bot may
// work except the one provisioning just issued.
// Not parallel: it must not share the fixed bot logins with another run.
func TestRotationRevokesTokensMintedWithTheBotPassword(t *testing.T) {
	srv := gitea.Get(t)
	dir := t.TempDir()
	opts := provisionOptions(srv, dir, srv.Unique("rotate"))
	if _, err := provision.Run(testCtx(t), opts); err != nil {
		t.Fatalf("provision: %v", err)
	}
	env, err := config.ReadEnvFile(opts.EnvFile)
	if err != nil {
		t.Fatal(err)
	}
	bot := config.DefaultBotUser(config.RoleDev)
	stolen := mintToken(t, srv, bot, env["FORGE_PASS"], "not-disinto")
	if got := tokenLogin(t, srv, stolen); got != bot {
		t.Fatalf("the minted token authenticates as %q, want %s", got, bot)
	}

	opts.RotateTokens = true
	if _, err := provision.Run(testCtx(t), opts); err != nil {
		t.Fatalf("provision --rotate-tokens: %v", err)
	}
	if got := tokenLogin(t, srv, stolen); got != "" {
		t.Errorf("after rotation the token minted with %s's password still authenticates as %s", bot, got)
	}
	if got := tokenLogin(t, srv, env["FORGE_TOKEN"]); got != "" {
		t.Errorf("after rotation %s's previous token still authenticates", bot)
	}
	rotated, err := config.ReadEnvFile(opts.EnvFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := tokenLogin(t, srv, rotated["FORGE_TOKEN"]); got != bot {
		t.Errorf("the issued token authenticates as %q, want %s", got, bot)
	}
}

package review

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/logx"
)

// The review session gets no forge token, so by default the prompt must
// not tell the model to authenticate with one (it named FORGE_TOKEN, the
// dev bot's variable, which the session never had).
func TestPromptNamesNoTokenByDefault(t *testing.T) {
	f, err := formula.Load(formulas.FS, "review-pr")
	if err != nil {
		t.Fatal(err)
	}
	var fc *forge.RepoClient
	for _, tt := range []struct {
		tokenEnv string
		want     bool
	}{{"", false}, {"FORGE_REVIEW_TOKEN", true}} {
		a, err := New(Options{Project: &config.Project{Name: "p", Repo: "o/p", ForgeURL: "http://forge:3000"},
			Forge: fc, Claude: &claudetest.Scripted{}, Formula: f, Checkout: primaryOnly{fsys: fstest.MapFS{}},
			StateDir: t.TempDir(), TokenEnv: tt.tokenEnv})
		if err != nil {
			t.Fatal(err)
		}
		full, err := a.fullPrompt(t.Context(), promptInput{c: candidate{pr: forge.PullRequest{Number: 3, HeadSHA: sha2}}}, "/tmp/out.json", logx.Nop())
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(full, "Authorization: token"); got != tt.want {
			t.Errorf("TokenEnv %q: prompt mentions a token: %v, want %v", tt.tokenEnv, got, tt.want)
		}
		if strings.Contains(full, "FORGE_TOKEN") {
			t.Errorf("TokenEnv %q: prompt names the dev bot's FORGE_TOKEN", tt.tokenEnv)
		}
	}
}

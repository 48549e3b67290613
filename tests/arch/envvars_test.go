package arch

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
)

// notSettings are variables the code names that are no operator's
// setting, each with why.
var notSettings = map[string]string{
	"DISINTO_BRANCH":                           "set for a session",
	"DISINTO_ISSUE":                            "set for a session",
	"DISINTO_JOB_ID":                           "set for a session",
	"DISINTO_LESSONS_FILE":                     "set for a session",
	"DISINTO_PHASE_FILE":                       "set for a session",
	"DISINTO_PLANNER_PLAN":                     "set for a session",
	"DISINTO_PREDICTOR_PROPOSALS":              "set for a session",
	"DISINTO_GARDENER_PROPOSALS":               "set for a session",
	"DISINTO_PRIMARY_BRANCH":                   "set for a session",
	"DISINTO_REPLY_FILE":                       "set for a session",
	"DISINTO_RESULT_FILE":                      "set for a session",
	"DISINTO_REVIEW_FILE":                      "set for a session",
	"DISINTO_SCRATCH_FILE":                     "set for a session",
	"DISINTO_SPRINT_FILE":                      "set for a session",
	"OPS_REPO_ROOT":                            "set for a session",
	"PROJECT_REPO_ROOT":                        "set for a session",
	"CLAUDE_CODE_DISABLE_AUTO_MEMORY":          "set for the CLI",
	"CLAUDE_CODE_DISABLE_CLAUDE_MDS":           "set for the CLI",
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "set for the CLI",
	"CLAUDE_CODE_MAX_RETRIES":                  "set for the CLI",
	"DISINTO_GIT_USER":                         "the git credential helper's, set for one git command",
	"DISINTO_GIT_PASSWORD":                     "the git credential helper's, set for one git command",
	"DISINTO_GIT_DEATHSIG_HELPER":              "re-executes the binary as git's parent",
	"DISINTO_DAEMON_HELPER":                    "a test hook",
	"DISINTO_OPS_TEST_WRITER":                  "a test hook",
	"SUPERVISOR_TEST_HELPER":                   "a test hook",
	"DISINTO_EDGE_SECRET_SET":                  "compose sets it from whether the edge's secret is",
}

// TestEveryVariableIsASetting: every environment variable the product
// code names is a registered setting (config.Vars, which `disinto config
// show` prints) or named above as none; every setting is documented in
// .env.example or the README.
func TestEveryVariableIsASetting(t *testing.T) {
	lits, err := EnvLiterals("../..")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range lits {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := config.VarOf(name); !ok && notSettings[name] == "" {
			t.Errorf("%s names %s, which is no registered setting: add it to lib/config/vars.go and document it", lits[name], name)
		}
	}
	var docs strings.Builder
	for _, f := range []string{"../../.env.example", "../../README.md"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(data)
	}
	for _, v := range config.Vars() {
		if v.Alias != "" {
			// The docs name the spelling init writes, and the other
			// spellings by their pattern.
			continue
		}
		if !strings.Contains(docs.String(), v.Name) {
			t.Errorf("%s is documented neither in .env.example nor in the README", v.Name)
		}
	}
}

// TestEnvLiteralsFixture proves the scan finds a variable named in
// product code.
func TestEnvLiteralsFixture(t *testing.T) {
	lits, err := EnvLiterals("testdata/bad")
	if err != nil {
		t.Fatal(err)
	}
	if lits["DISINTO_NOT_A_SETTING"] != "lib/low/low.go" {
		t.Errorf("literals %v", lits)
	}
	if _, ok := config.VarOf("DISINTO_NOT_A_SETTING"); ok {
		t.Error("the fixture's variable is registered")
	}
}

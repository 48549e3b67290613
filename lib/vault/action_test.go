package vault_test

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/tomlpos"
	"github.com/disinto/disinto/lib/vault"
)

// formulas are the shipped formulas, as the runner executes them.
var formulas = os.DirFS("../../formulas")

const release = `id = "x"
formula = "release"
context = "Release v1.2.0"
secrets = ["GITHUB_TOKEN"]
vars = { version = "v1.2.0", sha = "0123456789abcdef0123456789abcdef01234567" }
`

// releaseNoVars is the release action without the variables its formula
// requires.
const releaseNoVars = `id = "x"
formula = "release"
context = "Release v1.2.0"
secrets = ["GITHUB_TOKEN"]
`

// TestValidate is spec 70 §1.6.
func TestValidate(t *testing.T) {
	v := vault.Validator{Formulas: formulas}
	cases := []struct {
		name, file, src string
		want            error  // nil: valid
		field           string // the field the problem names
	}{
		{"release is valid", "x.toml", release, nil, ""},
		{"unknown field", "x.toml", release + `unblocks = ["#1"]` + "\n", vault.ErrUnknownField, "unblocks"},
		{"secret not allowed", "x.toml", strings.Replace(release, "GITHUB_TOKEN", "AWS_KEY", 1), vault.ErrNotAllowed, "secrets"},
		{"no secrets line", "x.toml", strings.Replace(release, `secrets = ["GITHUB_TOKEN"]`, "", 1), vault.ErrRequired, "secrets"},
		{"empty secrets", "x.toml", strings.Replace(release, `["GITHUB_TOKEN"]`, "[]", 1), nil, ""},
		{"mounts refused", "x.toml", strings.Replace(release, "vars = ", `mounts = ["ssh"]`+"\nvars = ", 1), vault.ErrRemovedField, "mounts"},
		{"tools refused", "x.toml", strings.Replace(release, "vars = ", `tools = ["docker"]`+"\nvars = ", 1), vault.ErrRemovedField, "tools"},
		{"unknown formula", "x.toml", strings.Replace(release, `"release"`, `"nope"`, 1), vault.ErrUnknownFormula, "formula"},
		{"timeout not a number", "x.toml", release + `timeout_minutes = "abc"` + "\n", vault.ErrSyntax, "timeout_minutes"},
		{"id is not the file name", "a.toml", strings.Replace(release, `"x"`, `"b"`, 1), vault.ErrIDMismatch, "id"},
		{"id not an id", "X_Y.toml", strings.Replace(release, `"x"`, `"X_Y"`, 1), vault.ErrBadValue, "id"},
		{"tier override must be a tier", "x.toml", release + `blast_radius = "none"` + "\n", vault.ErrBadValue, "blast_radius"},
		{"undeclared formula variable", "x.toml", strings.Replace(release, "vars = { ", `vars = { bogus = "1", `, 1), vault.ErrUnknownField, "vars.bogus"},
		{"required variable missing", "x.toml", releaseNoVars + "[vars]\nversion = \"v1.2.0\"\n", vault.ErrMissingVar, "vars.sha"},
		{"required variables, no vars table", "x.toml", releaseNoVars, vault.ErrMissingVar, "vars.version"},
		{"required file variable filled by the runner", "x.toml", strings.Replace(releaseNoVars, `"release"`, `"run-planner"`, 1), nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := v.Parse("vault/actions/"+tc.file, []byte(tc.src))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("want %v, got %v (action %+v)", tc.want, err, a)
			}
			var p *tomlpos.Problem
			if !errors.As(err, &p) || !strings.Contains(err.Error(), tc.field) || !strings.HasPrefix(p.File, "vault/actions/") {
				t.Fatalf("the error does not name %s in its file: %v", tc.field, err)
			}
			if p.Line == 0 && tc.want != vault.ErrRequired {
				t.Errorf("no line in %v", err)
			}
		})
	}
}

// TestValidateExports: the valid release action's secrets and defaults.
func TestValidateExports(t *testing.T) {
	a, err := vault.Validator{Formulas: formulas}.Parse("x.toml", []byte(release))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Secrets, []string{"GITHUB_TOKEN"}) || a.TimeoutMinutes != vault.DefaultTimeoutMinutes || a.Formula != "release" {
		t.Fatalf("got %+v", a)
	}
}

// TestValidateReportsEverything: all problems at once, each on its line.
func TestValidateReportsEverything(t *testing.T) {
	src := "id = \"x\"\nformula = \"nope\"\ncontext = \"\"\nsecrets = [\"AWS_KEY\"]\nextra = 1\n"
	_, err := vault.Validator{Formulas: formulas}.Parse("x.toml", []byte(src))
	var ps tomlpos.Problems
	if !errors.As(err, &ps) || len(ps) != 4 {
		t.Fatalf("want 4 problems, got %v", err)
	}
	if !strings.Contains(err.Error(), "x.toml:4: secrets") || !strings.Contains(err.Error(), "x.toml:5: extra") {
		t.Fatalf("positions missing: %v", err)
	}
}

// TestClassify is spec 70 §2.5.
func TestClassify(t *testing.T) {
	pol, err := vault.ParsePolicy("policy.toml", []byte("[tiers]\nrelease = \"high\"\ntriage = \"low\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		policy   *vault.Policy
		formula  string
		override vault.Tier
		want     vault.Tier
	}{
		{"listed high", pol, "release", vault.TierNone, vault.TierHigh},
		{"no policy file", vault.DefaultPolicy(), "triage", vault.TierNone, vault.TierHigh},
		{"override cannot lower", pol, "release", vault.TierLow, vault.TierHigh},
		{"override raises", pol, "triage", vault.TierHigh, vault.TierHigh},
		{"listed low", pol, "triage", vault.TierNone, vault.TierLow},
		{"unlisted formula", pol, "dev", vault.TierNone, vault.TierHigh},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.policy.Classify(vault.Action{Formula: tc.formula, BlastRadius: tc.override})
			if got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestPolicyStrict: unknown keys and tiers in the policy are errors with
// positions; the policy init seeds parses.
func TestPolicyStrict(t *testing.T) {
	if _, err := vault.ParsePolicy("p.toml", []byte("[tiers]\nrelease = \"severe\"\n")); !errors.Is(err, vault.ErrBadValue) ||
		!strings.Contains(err.Error(), "p.toml:2") {
		t.Errorf("unknown tier: %v", err)
	}
	if _, err := vault.ParsePolicy("p.toml", []byte("[tier]\nrelease = \"high\"\n")); !errors.Is(err, vault.ErrUnknownField) {
		t.Errorf("unknown table: %v", err)
	}
	if _, err := vault.ParsePolicy("p.toml", []byte("[allow]\nmounts = [\"ssh\"]\n")); !errors.Is(err, vault.ErrRemovedField) ||
		!strings.Contains(err.Error(), "p.toml:2: allow.mounts") {
		t.Errorf("mounts in the policy: %v", err)
	}
	seeded, err := os.ReadFile("../provision/opslayout/vault/policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := vault.ParsePolicy("vault/policy.toml", seeded)
	if err != nil || p.Tier("triage") != vault.TierLow || p.Tier("release") != vault.TierHigh {
		t.Fatalf("seeded policy: %v", err)
	}
}

// TestEncodeRoundTrip: an Action encoded and parsed again is the same.
func TestEncodeRoundTrip(t *testing.T) {
	in := vault.Action{ID: "release-v1-2-0", Formula: "release", Context: "Release \"v1.2.0\"\nnow", Secrets: []string{"GITHUB_TOKEN"},
		TimeoutMinutes: 30, BlastRadius: vault.TierHigh, Vars: map[string]string{"version": "v1.2.0", "sha": strings.Repeat("a", 40)}}
	data, err := vault.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := vault.Validator{Formulas: formulas}.Parse("vault/actions/release-v1-2-0.toml", data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if out.ID != in.ID || out.Context != in.Context || !slices.Equal(out.Secrets, in.Secrets) ||
		out.TimeoutMinutes != 30 || out.BlastRadius != vault.TierHigh || out.Vars["version"] != "v1.2.0" {
		t.Fatalf("round trip: %+v\n%s", out, data)
	}
	empty, err := vault.Encode(vault.Action{ID: "x", Formula: "release", Context: "c"})
	if err != nil || !strings.Contains(string(empty), "secrets = []") {
		t.Fatalf("no secrets: %q, %v", empty, err)
	}
}

// TestShippedPoliciesNameShippedFormulas: every formula a shipped policy
// classifies exists under formulas/ and lints, so no tier is written for
// an action that could never be filed.
func TestShippedPoliciesNameShippedFormulas(t *testing.T) {
	var policies []string
	err := fs.WalkDir(os.DirFS("../.."), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return fs.SkipDir
		}
		if !d.IsDir() && path.Base(p) == "policy.toml" && strings.Contains(p, "vault/") {
			policies = append(policies, p)
		}
		return nil
	})
	if err != nil || len(policies) == 0 {
		t.Fatalf("no shipped policy found: %v", err)
	}
	for _, p := range policies {
		data, err := os.ReadFile("../../" + p)
		if err != nil {
			t.Fatal(err)
		}
		pol, err := vault.ParsePolicy(p, data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for name := range pol.Tiers {
			if _, err := formula.Load(formulas, name); err != nil {
				t.Errorf("%s names formula %s: %v", p, name, err)
			}
		}
	}
}

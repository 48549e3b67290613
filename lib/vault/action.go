package vault

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/tomlpos"
)

// Paths in the ops repository.
const (
	// ActionsDir holds the actions, vault/actions/<id>.toml.
	ActionsDir = "vault/actions"
	// ResultsDir holds one record per action the dispatcher started,
	// vault/results/<id>.toml.
	ResultsDir = "vault/results"
	// PolicyPath is the blast-radius policy.
	PolicyPath = "vault/policy.toml"
)

// DefaultTimeoutMinutes bounds a run whose action names no timeout.
const DefaultTimeoutMinutes = 60

// DispatchDirect is the dispatch_mode a low-tier request writes. The
// dispatcher never trusts it: it decides the tier and the path itself.
const DispatchDirect = "direct"

// Sentinels of validation problems; each tomlpos.Problem wraps one.
var (
	ErrSyntax         = errors.New("not valid TOML")
	ErrUnknownField   = errors.New("unknown field")
	ErrRequired       = errors.New("required field missing")
	ErrBadValue       = errors.New("bad value")
	ErrNotAllowed     = errors.New("not in allowlist")
	ErrUnknownFormula = errors.New("unknown formula")
	ErrIDMismatch     = errors.New("id does not match the file name")
	ErrMissingVar     = errors.New("formula variable without a value")
	ErrRemovedField   = errors.New("field no longer part of an action")
)

// removedFields are the fields actions had and no runner ever honoured,
// each with what to do instead: refused, so that nobody relies on them.
var removedFields = map[string]string{
	"mounts": "no longer part of an action (the runner mounts nothing of the host): give the run what it needs as a declared secret, such as an SSH key, and remove the line",
	"tools":  "no longer part of an action (the runner image holds the run's tools): remove the line",
}

// idPattern is the form of an id: it becomes a file name, a branch name
// and a container name.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// secretPattern is the form of a secret name (spec 70 §8.6).
var secretPattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// Action is a validated vault action.
type Action struct {
	ID      string
	Formula string
	Context string
	// Secrets are the names of the secrets the runner gets; never values.
	Secrets []string
	Model   string
	// TimeoutMinutes is the run's limit; DefaultTimeoutMinutes when the
	// file names none.
	TimeoutMinutes int
	// BlastRadius is the tier the file asks for; it can only raise the
	// policy's tier (TierNone when absent).
	BlastRadius Tier
	// DispatchMode is the file's dispatch_mode, informational.
	DispatchMode string
	// Vars are the formula's variables.
	Vars map[string]string
}

// rawAction mirrors the file; pointers tell a missing key from an empty
// one.
type rawAction struct {
	ID             *string           `toml:"id"`
	Formula        *string           `toml:"formula"`
	Context        *string           `toml:"context"`
	Secrets        *[]string         `toml:"secrets"`
	Model          *string           `toml:"model"`
	TimeoutMinutes *int64            `toml:"timeout_minutes"`
	BlastRadius    *string           `toml:"blast_radius"`
	DispatchMode   *string           `toml:"dispatch_mode"`
	Vars           map[string]string `toml:"vars"`
	// Mounts and Tools were parsed and never used by any runner; they
	// are decoded only to refuse them with the reason (removedFields).
	Mounts any `toml:"mounts"`
	Tools  any `toml:"tools"`
}

// Validator checks action files. The requesting agent, the dispatcher and
// `disinto vault lint` share it, so an action one accepts the others
// accept.
type Validator struct {
	// Formulas are the formulas the runner can execute (formulas.FS):
	// an action's formula must be one of them.
	Formulas fs.FS
	// Policy gives the secret and mount allowlists; nil means
	// DefaultPolicy.
	Policy *Policy
}

// ActionPath returns the ops-repository path of action id.
func ActionPath(id string) string { return ActionsDir + "/" + id + ".toml" }

// ResultPath returns the ops-repository path of action id's result.
func ResultPath(id string) string { return ResultsDir + "/" + id + ".toml" }

// IDOf returns the id an action file's path names ("" when the path is
// not a .toml file).
func IDOf(file string) string {
	base := path.Base(file)
	id, ok := strings.CutSuffix(base, ".toml")
	if !ok {
		return ""
	}
	return id
}

// ValidID reports whether id has the form of an action id.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Parse decodes and validates the action file at file (its path, used in
// errors and to check the id). Every problem is reported, each as a
// tomlpos.Problem naming the file, line and field.
func (v Validator) Parse(file string, data []byte) (Action, error) {
	var raw rawAction
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&raw)
	if err != nil {
		line, key, msg := tomlpos.DecodeError(err)
		return Action{}, tomlpos.Problems{{File: file, Line: line, Key: key, Msg: msg, Err: ErrSyntax}}
	}
	c := check{file: file, loc: tomlpos.New(string(data))}
	for _, k := range md.Undecoded() {
		c.add(k.String(), ErrUnknownField, "unknown field %q", k.String())
	}
	pol := v.Policy
	if pol == nil {
		pol = DefaultPolicy()
	}
	a := Action{TimeoutMinutes: DefaultTimeoutMinutes, Vars: raw.Vars}
	a.ID = c.required(raw.ID, "id")
	a.Formula = c.required(raw.Formula, "formula")
	a.Context = c.required(raw.Context, "context")
	if a.ID != "" {
		if !ValidID(a.ID) {
			c.add("id", ErrBadValue, "%q is not an id (lowercase letters, digits and '-', at most 63)", a.ID)
		} else if want := IDOf(file); want != a.ID {
			c.add("id", ErrIDMismatch, "%q but the file is %s", a.ID, path.Base(file))
		}
	}
	if raw.Secrets == nil {
		c.add("secrets", ErrRequired, "required (secrets = [] when the action needs none)")
	} else {
		a.Secrets = *raw.Secrets
		for _, s := range a.Secrets {
			switch {
			case !secretPattern.MatchString(s):
				c.add("secrets", ErrBadValue, "%q is not a secret name", s)
			case a.Formula == MirrorFormula && mirrorSecretPattern.MatchString(s):
				// A mirror's credential (MIRROR_<NAME>_TOKEN), for its push only.
			case !slices.Contains(pol.Secrets, s):
				c.add("secrets", ErrNotAllowed, "%q not in allowlist (%s)", s, strings.Join(pol.Secrets, " "))
			}
		}
	}
	if raw.Mounts != nil {
		c.add("mounts", ErrRemovedField, "%s", removedFields["mounts"])
	}
	if raw.Tools != nil {
		c.add("tools", ErrRemovedField, "%s", removedFields["tools"])
	}
	if raw.Model != nil {
		if a.Model = *raw.Model; strings.TrimSpace(a.Model) == "" {
			c.add("model", ErrBadValue, "empty")
		}
	}
	if raw.TimeoutMinutes != nil {
		if *raw.TimeoutMinutes <= 0 || *raw.TimeoutMinutes > 24*60 {
			c.add("timeout_minutes", ErrBadValue, "%d is not between 1 and 1440", *raw.TimeoutMinutes)
		} else {
			a.TimeoutMinutes = int(*raw.TimeoutMinutes)
		}
	}
	if raw.BlastRadius != nil {
		t, err := ParseTier(*raw.BlastRadius)
		if err != nil {
			c.add("blast_radius", ErrBadValue, "%v", err)
		}
		a.BlastRadius = t
	}
	if raw.DispatchMode != nil {
		a.DispatchMode = *raw.DispatchMode
		if a.DispatchMode != DispatchDirect && a.DispatchMode != "pr" {
			c.add("dispatch_mode", ErrBadValue, "%q is neither %q nor \"pr\"", a.DispatchMode, DispatchDirect)
		}
	}
	if a.Formula != "" {
		c.formula(v.Formulas, a.Formula, a.Vars)
	}
	if err := c.ps.Err(); err != nil {
		return Action{}, err
	}
	return a, nil
}

// check collects the problems of one file.
type check struct {
	file string
	loc  *tomlpos.Locator
	ps   tomlpos.Problems
}

func (c *check) add(key string, sentinel error, format string, args ...any) {
	c.ps = append(c.ps, &tomlpos.Problem{File: c.file, Line: c.loc.Line(key), Key: key,
		Msg: fmt.Sprintf(format, args...), Err: sentinel})
}

// required returns *s, or "" after noting a missing or empty field.
func (c *check) required(s *string, key string) string {
	if s == nil || strings.TrimSpace(*s) == "" {
		c.add(key, ErrRequired, "required and not empty")
		return ""
	}
	return *s
}

// formula checks that name is a formula the runner has and that vars
// names only variables it declares.
func (c *check) formula(fsys fs.FS, name string, vars map[string]string) {
	if fsys == nil || !ValidID(name) {
		c.add("formula", ErrUnknownFormula, "%q: no such formula", name)
		return
	}
	f, err := formula.Load(fsys, name)
	if errors.Is(err, formula.ErrNotFound) {
		c.add("formula", ErrUnknownFormula, "%q: no formula %s.toml", name, name)
		return
	}
	if err != nil {
		c.add("formula", ErrUnknownFormula, "%q does not load: %v", name, err)
		return
	}
	for k := range vars {
		if _, ok := f.Var(k); !ok {
			c.add("vars."+k, ErrUnknownField, "formula %s declares no variable %q", name, k)
		}
	}
	// A required variable with no value would fail only when the runner
	// renders the formula, after approval and claim: refuse it here, where
	// the requester, the dispatcher and `vault lint` all look.
	line := c.loc.Line("vars")
	if line == 0 {
		line = c.loc.Line("formula")
	}
	for _, fv := range f.Vars {
		if _, ok := vars[fv.Name]; ok || !fv.Required || fv.HasDefault || RunnerFills(fv.Name) {
			continue
		}
		c.ps = append(c.ps, &tomlpos.Problem{File: c.file, Line: line, Key: "vars." + fv.Name, Err: ErrMissingVar,
			Msg: fmt.Sprintf("formula %s requires variable %q and the action gives none ([vars] %s = \"...\")", name, fv.Name, fv.Name)})
	}
}

// Package release is a versioned release of a project through the vault
// (spec 70 §7): the typed release action an operator requests, the
// mechanical job the vault runner executes for it, and the result that job
// reports, validated before the dispatcher records it.
//
// A release tags one commit, the primary branch's head when it was
// requested, so the administrator who approves the action approves that
// commit. The job runs in the runner container with the release
// credential declared in the action (RELEASE_TOKEN, a forge token that may
// create tags) and a token per mirror it pushes the tag to. It never
// moves a tag: a tag already on the commit counts as done, so an
// interrupted release run again completes, and a tag on another commit
// fails the release. Images are not built here: the runner holds no Docker
// socket, so the tag is what a project's CI builds and publishes from.
package release

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/disinto/disinto/lib/vault"
)

// Formula is the vault formula of a release.
const Formula = "release"

// TokenSecret is the secret the release job creates the tag with: a
// forge token with write access to the project repository.
const TokenSecret = "RELEASE_TOKEN"

// The action's variables (formulas/release.toml declares them).
const (
	VarVersion = "version"
	VarSHA     = "sha"
	VarProject = "project"
)

// Errors of a release request.
var (
	// ErrBadVersion: the version is not vMAJOR.MINOR.PATCH.
	ErrBadVersion = errors.New("not a release version (vMAJOR.MINOR.PATCH, e.g. v1.2.0)")
	// ErrTagElsewhere: the version's tag exists on another commit.
	ErrTagElsewhere = errors.New("the tag exists on another commit")
	// ErrBadProject: the project's name cannot make an action id.
	ErrBadProject = errors.New("the project name cannot make a release action id")
)

// versionPattern is semver's core, without leading zeros.
var versionPattern = regexp.MustCompile(`^v(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})$`)

// shaPattern is a full commit id.
var shaPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// ParseVersion checks that v is vMAJOR.MINOR.PATCH.
func ParseVersion(v string) (string, error) {
	if !versionPattern.MatchString(v) {
		return "", fmt.Errorf("%q: %w", v, ErrBadVersion)
	}
	return v, nil
}

// ActionID is the id of project's release of version: release-<project>-
// <version with dots as dashes> (v1.2.0 → release-widgets-v1-2-0), one
// per release, so a second request of the same release is the first one.
func ActionID(project, version string) (string, error) {
	if _, err := ParseVersion(version); err != nil {
		return "", err
	}
	p := strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		case r == '_' || r == '.':
			return '-'
		}
		return r
	}, project)
	id := "release-" + p + "-" + strings.ReplaceAll(version, ".", "-")
	if !vault.ValidID(id) {
		return "", fmt.Errorf("project %q: %w (%q)", project, ErrBadProject, id)
	}
	return id, nil
}

// MirrorSecret is the secret of mirror name's token: MIRROR_<NAME>_TOKEN,
// the name upper-cased with '-' and '.' as '_'.
func MirrorSecret(name string) string {
	n := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r == '-' || r == '.':
			return '_'
		}
		return r
	}, name)
	return "MIRROR_" + n + "_TOKEN"
}

// Request is one release to ask the vault for.
type Request struct {
	// Project is the project's name; Version the release; SHA the commit
	// to tag (the primary branch's head when requested).
	Project, Version, SHA string
	// Mirrors are the names of the mirrors whose token the release gets;
	// the job pushes the tag to those and skips the others.
	Mirrors []string
	// TimeoutMinutes bounds the run (vault.DefaultTimeoutMinutes when 0).
	TimeoutMinutes int
	// Attempt numbers a release asked for again after an attempt that
	// did not complete (0 and 1 are the first); see AttemptID.
	Attempt int
}

// MaxAttempts bounds how often one release is asked for.
const MaxAttempts = 20

// AttemptID is the id of attempt n of the release whose first id is
// base: base itself for the first, base-r<n> after it. Each attempt is
// an action of its own, approved on its own; the job's idempotence makes
// a later attempt complete what an earlier one left half-done.
func AttemptID(base string, n int) string {
	if n <= 1 {
		return base
	}
	return fmt.Sprintf("%s-r%d", base, n)
}

// Action is the vault action of r, checked: the version, the commit and
// the id. Its tier is the policy's for the release formula (high by
// default); the approving administrator sees the commit in its context.
func (r Request) Action() (vault.Action, error) {
	base, err := ActionID(r.Project, r.Version)
	if err != nil {
		return vault.Action{}, err
	}
	if r.Attempt < 0 || r.Attempt > MaxAttempts {
		return vault.Action{}, fmt.Errorf("release %s: attempt %d, at most %d", r.Version, r.Attempt, MaxAttempts)
	}
	id := AttemptID(base, r.Attempt)
	if !vault.ValidID(id) {
		return vault.Action{}, fmt.Errorf("project %q: %w (%q)", r.Project, ErrBadProject, id)
	}
	if !shaPattern.MatchString(r.SHA) {
		return vault.Action{}, fmt.Errorf("release %s: %q is not a commit id", r.Version, r.SHA)
	}
	secrets := []string{TokenSecret}
	mirrors := append([]string(nil), r.Mirrors...)
	sort.Strings(mirrors)
	for _, m := range mirrors {
		secrets = append(secrets, MirrorSecret(m))
	}
	timeout := r.TimeoutMinutes
	if timeout == 0 {
		timeout = vault.DefaultTimeoutMinutes
	}
	return vault.Action{
		ID: id, Formula: Formula,
		Context: fmt.Sprintf("Release %s of %s: tag %s and push the tag to its mirrors", r.Version, r.Project, r.SHA),
		Secrets: secrets, TimeoutMinutes: timeout,
		Vars: map[string]string{VarVersion: r.Version, VarSHA: r.SHA, VarProject: r.Project},
	}, nil
}

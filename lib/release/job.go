package release

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/disinto/disinto/lib/vault"
)

// JobCommand is the command the runner image runs for a release: the
// disinto binary of the image, whose hidden runner-job subcommand runs
// Execute with the job's environment (Job.Env, which Plan builds from the
// approved action and the project's configuration) and the tokens as
// files under the runner's secrets directory.
const JobCommand = "disinto runner-job release"

// script is the mechanical job's shell line: the runner's /bin/sh hands
// the process over to JobCommand.
const script = "exec " + JobCommand

// Target is where a release acts, from the project's configuration: the
// forge as the runner's network reaches it, the repository, and the
// mirrors (name → git URL).
type Target struct {
	ForgeURL string
	Repo     string
	Mirrors  map[string]string
}

// Job is the mechanical runner job of a release: the script (JobCommand)
// and the environment it reads, plus what its result must say.
type Job struct {
	Script string
	Env    map[string]string
	// Version and SHA are the release; Mirrors the names of the mirrors
	// the result reports on (pushed or skipped), sorted.
	Version, SHA string
	Mirrors      []string
}

// Environment variables of the release job.
const (
	envForgeURL = "RELEASE_FORGE_URL"
	envRepo     = "RELEASE_REPO"
	envVersion  = "RELEASE_VERSION"
	envSHA      = "RELEASE_SHA"
	envMirrors  = "RELEASE_MIRROR_COUNT"
	// envMirror is the prefix of RELEASE_MIRROR_<i>_{NAME,URL,SECRET}.
	envMirror = "RELEASE_MIRROR_"
)

var (
	repoPattern       = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	mirrorNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// Plan builds the job of the approved release action a against t. A
// mirror is pushed when the action declares its token and its URL is
// http(s) (the runner mounts no SSH key); any other configured mirror is
// reported skipped.
func Plan(a vault.Action, t Target) (Job, error) {
	if a.Formula != Formula {
		return Job{}, fmt.Errorf("action %s: formula %q is not %q", a.ID, a.Formula, Formula)
	}
	v, err := ParseVersion(a.Vars[VarVersion])
	if err != nil {
		return Job{}, fmt.Errorf("action %s: vars.%s: %w", a.ID, VarVersion, err)
	}
	sha := a.Vars[VarSHA]
	if !shaPattern.MatchString(sha) {
		return Job{}, fmt.Errorf("action %s: vars.%s: %q is not a commit id", a.ID, VarSHA, sha)
	}
	if !slices.Contains(a.Secrets, TokenSecret) {
		return Job{}, fmt.Errorf("action %s: declares no %s to tag with", a.ID, TokenSecret)
	}
	if err := checkURL(t.ForgeURL); err != nil {
		return Job{}, fmt.Errorf("forge URL: %w", err)
	}
	if !repoPattern.MatchString(t.Repo) {
		return Job{}, fmt.Errorf("repository %q is not owner/name", t.Repo)
	}
	env := map[string]string{
		envForgeURL: strings.TrimRight(t.ForgeURL, "/"), envRepo: t.Repo, envVersion: v, envSHA: sha,
	}
	j := Job{Script: script, Env: env, Version: v, SHA: sha}
	names := make([]string, 0, len(t.Mirrors))
	for n := range t.Mirrors {
		names = append(names, n)
	}
	sort.Strings(names)
	i := 0
	for _, n := range names {
		if !mirrorNamePattern.MatchString(n) {
			return Job{}, fmt.Errorf("mirror %q: not a mirror name", n)
		}
		j.Mirrors = append(j.Mirrors, n)
		secret := MirrorSecret(n)
		if !slices.Contains(a.Secrets, secret) || checkURL(t.Mirrors[n]) != nil {
			secret = "" // reported skipped
		}
		p := envMirror + strconv.Itoa(i) + "_"
		env[p+"NAME"], env[p+"URL"], env[p+"SECRET"] = n, t.Mirrors[n], secret
		i++
	}
	env[envMirrors] = strconv.Itoa(i)
	return j, nil
}

// checkURL accepts an http(s) URL without credentials in it.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%q: %w", raw, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return fmt.Errorf("%q is not an http(s) URL", raw)
	case u.User != nil:
		return fmt.Errorf("%s holds credentials: the token is a secret", u.Redacted())
	}
	return nil
}

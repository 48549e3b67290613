package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/redact"
)

// ErrBadInputs: the job's environment is not one Plan builds.
var ErrBadInputs = errors.New("release job inputs")

// Inputs are what a release job acts on, as the runner hands them over:
// the environment Plan built (Job.Env) and the directory of the secret
// files, one per declared secret.
type Inputs struct {
	ForgeURL, Repo, Version, SHA string
	// Mirrors are in Plan's order (sorted by name); a mirror with no
	// Secret is reported skipped.
	Mirrors    []MirrorInput
	SecretsDir string
}

// MirrorInput is one mirror of a release job: its name, git URL and the
// name of the secret holding its token ("" when it is skipped).
type MirrorInput struct {
	Name, URL, Secret string
}

// maxMirrors bounds RELEASE_MIRROR_COUNT.
const maxMirrors = 100

// ReadInputs reads and checks a release job's inputs from getenv (the
// job's environment) and secretsDir. It refuses what Plan never builds,
// naming the variable: so a job cannot be pointed at another secret, a
// URL with credentials or a version that is no release.
func ReadInputs(getenv func(string) string, secretsDir string) (Inputs, error) {
	bad := func(name, format string, args ...any) (Inputs, error) {
		return Inputs{}, fmt.Errorf("%w: %s: %s", ErrBadInputs, name, fmt.Sprintf(format, args...))
	}
	in := Inputs{ForgeURL: getenv(envForgeURL), Repo: getenv(envRepo), SHA: getenv(envSHA), SecretsDir: secretsDir}
	v, err := ParseVersion(getenv(envVersion))
	if err != nil {
		return bad(envVersion, "%v", err)
	}
	in.Version = v
	if !shaPattern.MatchString(in.SHA) {
		return bad(envSHA, "%q is not a commit id", in.SHA)
	}
	if err := checkURL(in.ForgeURL); err != nil {
		return bad(envForgeURL, "%v", err)
	}
	if !repoPattern.MatchString(in.Repo) {
		return bad(envRepo, "%q is not owner/name", in.Repo)
	}
	if secretsDir == "" {
		return bad("secrets directory", "not set")
	}
	n, err := strconv.Atoi(getenv(envMirrors))
	if err != nil || n < 0 || n > maxMirrors {
		return bad(envMirrors, "%q is not a count from 0 to %d", getenv(envMirrors), maxMirrors)
	}
	for i := range n {
		p := envMirror + strconv.Itoa(i) + "_"
		m := MirrorInput{Name: getenv(p + "NAME"), URL: getenv(p + "URL"), Secret: getenv(p + "SECRET")}
		if !mirrorNamePattern.MatchString(m.Name) {
			return bad(p+"NAME", "%q is not a mirror name", m.Name)
		}
		if m.Secret != "" {
			if m.Secret != MirrorSecret(m.Name) {
				return bad(p+"SECRET", "%q is not the secret of mirror %s", m.Secret, m.Name)
			}
			if err := checkURL(m.URL); err != nil {
				return bad(p+"URL", "%v", err)
			}
		}
		in.Mirrors = append(in.Mirrors, m)
	}
	return in, nil
}

// ExecOptions configures Execute.
type ExecOptions struct {
	// Out receives the job's progress lines and, last, its result line.
	Out io.Writer
	// TempDir is where the job makes its scratch directory (the bare
	// copy it pushes the tag from), removed when it ends; os.TempDir()
	// when empty.
	TempDir string
	// Git is the git executable; "git" by default.
	Git string
	// HTTPClient is the forge client's base client (nil: the default).
	HTTPClient *http.Client
	// Log receives the forge's and git's debug lines.
	Log zerolog.Logger
}

// gitUser is the user name the mirrors' and the forge's git endpoints
// get with a token as the password.
const gitUser = "release"

// Execute runs the release job of in: it reads the tag from the forge,
// creates it on the commit unless it is already there, reads it back and
// refuses a tag on another commit (never moving one); then pushes the tag
// to every mirror with a token, never forced. It writes its progress and,
// last, the result line ParseResult checks to opts.Out, and returns the
// result. The tokens are read from in.SecretsDir and reach no argument,
// file or line of output: git gets them through lib/git's credential
// helper, and everything written is redacted.
func Execute(ctx context.Context, in Inputs, opts ExecOptions) Result {
	e := &execution{in: in, opts: opts, red: redact.New(),
		res: Result{Version: in.Version, SHA: in.SHA, Mirrors: map[string]string{}}}
	e.run(ctx)
	if e.scratch != "" {
		_ = os.RemoveAll(e.scratch)
	}
	if e.res.Reason != "" {
		e.res.Reason = e.red.String(e.res.Reason)
	}
	fmt.Fprintln(opts.Out, ResultMarker+e.res.JSON())
	return e.res
}

// execution is one run of Execute.
type execution struct {
	in   Inputs
	opts ExecOptions
	red  *redact.Redactor
	res  Result
	// scratch is the directory of the bare copy, once made.
	scratch string
}

// say writes one redacted progress line.
func (e *execution) say(format string, args ...any) {
	fmt.Fprintln(e.opts.Out, e.red.String(fmt.Sprintf(format, args...)))
}

// fail ends the release as failed, for reason.
func (e *execution) fail(format string, args ...any) {
	e.res.Status, e.res.Reason = StatusFailed, fmt.Sprintf(format, args...)
	e.res.Tag = ""
}

// run sets e.res: the tag, then the mirrors and the status.
func (e *execution) run(ctx context.Context) {
	token, err := readSecret(e.in.SecretsDir, TokenSecret)
	if err != nil {
		e.fail("no %s secret: %v", TokenSecret, err)
		return
	}
	e.red.Add(token)
	fc, err := forge.New(forge.Options{URL: e.in.ForgeURL, Token: token, User: gitUser,
		HTTPClient: e.opts.HTTPClient, Logger: e.opts.Log, Redactor: e.red})
	if err != nil {
		e.fail("forge: %v", err)
		return
	}
	owner, name, _ := strings.Cut(e.in.Repo, "/")
	e.say("release %s of %s at %s", e.in.Version, e.in.Repo, e.in.SHA)
	if !e.tag(ctx, fc.Repo(owner, name)) {
		return
	}
	failed := e.mirrors(ctx, token)
	e.res.Status = StatusReleased
	if failed {
		e.res.Status, e.res.Reason = StatusPartial, "a mirror push failed"
	}
}

// tag puts the version's tag on the commit, or finds it there, and
// reports whether it is there (e.res.Tag says how); otherwise the
// release failed.
func (e *execution) tag(ctx context.Context, repo *forge.RepoClient) bool {
	v, sha := e.in.Version, e.in.SHA
	at, err := tagged(ctx, repo, v)
	if err != nil {
		e.fail("cannot read the tag %s: %v", v, err)
		return false
	}
	if at != "" && at != sha {
		e.fail("the tag %s exists at %s, not %s: it is never moved", v, at, sha)
		return false
	}
	if at == sha {
		e.res.Tag = TagExisting
		e.say("tag %s already at %s", v, sha)
		return true
	}
	e.res.Tag = TagCreated
	if _, err := repo.CreateTag(ctx, v, sha, "Release "+v); err != nil {
		if !errors.Is(err, forge.ErrConflict) && !errors.Is(err, forge.ErrInvalid) {
			e.fail("cannot create the tag %s: %v", v, err)
			return false
		}
		e.res.Tag = TagExisting // made meanwhile: checked below
	}
	if at, err = tagged(ctx, repo, v); err != nil {
		e.fail("cannot read the tag %s back: %v", v, err)
		return false
	}
	if at != sha {
		if at == "" {
			at = "nothing"
		}
		e.fail("the tag %s is at %s, not %s", v, at, sha)
		return false
	}
	e.say("tag %s %s at %s", v, e.res.Tag, sha)
	return true
}

// tagged is the commit the tag points at, "" when there is none.
func tagged(ctx context.Context, repo *forge.RepoClient, name string) (string, error) {
	t, err := repo.GetTag(ctx, name)
	if errors.Is(err, forge.ErrNotFound) {
		return "", nil
	}
	return t.SHA, err
}

// mirrors pushes the tag to every mirror with a token, records each
// mirror's state and reports whether a push failed. The tag is fetched
// from the forge once, for the first mirror that needs it.
func (e *execution) mirrors(ctx context.Context, token string) (failed bool) {
	var src *git.Repo
	var srcErr error
	fetched := false
	ref := "refs/tags/" + e.in.Version
	for _, m := range e.in.Mirrors {
		state := MirrorSkipped
		mtoken, err := readSecret(e.in.SecretsDir, m.Secret)
		switch {
		case m.Secret == "" || err != nil:
			e.say("mirror %s: skipped (no token declared for it, or not an http(s) URL)", m.Name)
		default:
			e.red.Add(mtoken)
			if !fetched {
				src, srcErr = e.source(ctx, token)
				fetched = true
			}
			state = e.push(ctx, src, srcErr, m, mtoken, ref)
			e.say("mirror %s: %s", m.Name, state)
		}
		if strings.HasPrefix(state, mirrorFailed) {
			failed = true
		}
		e.res.Mirrors[m.Name] = state
	}
	return failed
}

// push pushes ref from src to mirror m as its token and returns the
// mirror's state.
func (e *execution) push(ctx context.Context, src *git.Repo, srcErr error, m MirrorInput, mtoken, ref string) string {
	if srcErr != nil {
		return mirrorFailed + "cannot fetch the tag from the forge: " + brief(e.red, srcErr)
	}
	u, err := url.Parse(m.URL)
	if err != nil {
		return mirrorFailed + err.Error()
	}
	// The token travels in memory only: PushMirror takes it out of the
	// URL and hands it to git through the credential helper.
	u.User = url.UserPassword(gitUser, mtoken)
	if err := src.PushMirror(ctx, u.String(), ref+":"+ref); err != nil {
		return mirrorFailed + brief(e.red, err)
	}
	return MirrorOK
}

// source is a bare copy of the forge repository, with the release's
// tag, in the execution's scratch directory.
func (e *execution) source(ctx context.Context, token string) (*git.Repo, error) {
	dir, err := os.MkdirTemp(e.opts.TempDir, "release-")
	if err != nil {
		return nil, err
	}
	e.scratch = dir
	g := git.New(git.Options{Binary: e.opts.Git, Redactor: e.red, Log: e.opts.Log,
		Credentials: &git.Credentials{URL: e.in.ForgeURL, Username: gitUser, Password: token},
		Env:         []string{"GIT_CONFIG_NOSYSTEM=1"}})
	return g.CloneBare(ctx, e.in.ForgeURL+"/"+e.in.Repo+".git", filepath.Join(dir, "repo.git"))
}

// brief is err's message for a mirror's state: git's last two lines of
// stderr when git failed, on one line, redacted and bounded.
func brief(red *redact.Redactor, err error) string {
	msg := err.Error()
	var gerr *git.Error
	if errors.As(err, &gerr) && gerr.Stderr != "" {
		lines := strings.Split(strings.TrimSpace(gerr.Stderr), "\n")
		msg = strings.Join(lines[max(0, len(lines)-2):], " ")
	}
	msg = red.String(strings.Join(strings.Fields(msg), " "))
	if len(msg) > 300 {
		msg = strings.ToValidUTF8(msg[:300], "") + "…"
	}
	return msg
}

// readSecret reads the secret file name of dir, without a final line
// break; an empty one is an error.
func readSecret(dir, name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("secret %q: not a secret name", name)
	}
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(data), "\r\n")
	if s == "" {
		return "", fmt.Errorf("%s is empty", filepath.Join(dir, name))
	}
	return s, nil
}

// Package git drives the git command-line client for the agents: clones,
// fetches, worktrees, rebases and pushes. Every call takes a context and
// kills git's whole process group when the context ends.
//
// Credentials never appear in argv, URLs or files: see Credentials for how
// they reach git. Errors carry the subcommand and git's stderr with every
// secret masked.
package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/redact"
)

// Sentinel errors callers branch on.
var (
	// ErrNotFound: a ref does not exist (on the remote, for RemoteSHA).
	ErrNotFound = errors.New("ref not found")
	// ErrRejected: the remote refused a push (not a fast-forward, or the
	// lease of --force-with-lease did not hold).
	ErrRejected = errors.New("push rejected")
	// ErrProtected: the remote refused a push to a protected branch; it
	// also wraps ErrRejected.
	ErrProtected = errors.New("protected branch")
	// ErrConflict: a rebase stopped on conflicts and was aborted.
	ErrConflict = errors.New("rebase conflict")
	// ErrDetached: HEAD is not on a branch.
	ErrDetached = errors.New("detached HEAD")
	// ErrNotClone: a directory exists but is not a clone or worktree we can
	// use; it is left untouched.
	ErrNotClone = errors.New("not a git clone")
	// ErrWorktreeBusy: a worktree exists at the path but on another branch.
	ErrWorktreeBusy = errors.New("worktree in use")
)

// Error is a failed git command. Args and Stderr are already redacted.
type Error struct {
	Args   []string // the arguments after "git", redacted
	Stderr string   // git's stderr, trimmed and redacted
	Err    error    // the exec error, or the context's error
}

// Error implements error: "git <subcommand>: <stderr>: <cause>".
func (e *Error) Error() string {
	sub := "git"
	if len(e.Args) > 0 {
		sub += " " + e.Args[0]
	}
	if e.Stderr == "" {
		return fmt.Sprintf("%s: %v", sub, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", sub, e.Stderr, e.Err)
}

// Unwrap returns the underlying cause, so errors.Is(err, context.Canceled)
// holds for a cancelled command.
func (e *Error) Unwrap() error { return e.Err }

// maxStderr bounds how much of git's stderr an error carries.
const maxStderr = 2000

// Options configures a Git.
type Options struct {
	// Binary is the git executable; "git" (looked up in PATH) by default.
	Binary string
	// Credentials, when set, authenticate HTTP(S) requests to Credentials.URL.
	Credentials *Credentials
	// Redactor masks further secrets in errors and logs; the password in
	// Credentials is always masked.
	Redactor *redact.Redactor
	// Env is added to the environment of every git process, after the
	// inherited environment (tests point GIT_CONFIG_GLOBAL at an empty file).
	Env []string
	// Log receives one debug line per git command.
	Log zerolog.Logger
	// WaitDelay is how long to wait for git's output pipes after it was
	// killed; 5 s by default.
	WaitDelay time.Duration
	// NetworkTimeout bounds every command that reaches a remote (clone,
	// fetch, push, ls-remote), so a forge that stops answering mid-transfer
	// cannot hold a run forever; DefaultNetworkTimeout when zero.
	NetworkTimeout time.Duration
	// RunAs runs every git process as this identity (a session's, to work
	// in its checkout on its behalf); nil runs them as the daemon. Such a
	// Git must carry no Credentials.
	RunAs *User
}

// User is a uid and gid to run git as, without supplementary groups.
type User struct {
	UID, GID uint32
}

// Git runs git commands with a fixed environment and credentials. It is safe
// for concurrent use. Operations that change a clone's shared state (fetch,
// worktree add and remove, configuration) are serialised per clone
// directory within one Git, since concurrent git processes on one clone fail
// on each other's lock files; across processes, each daemon must own its
// clone.
type Git struct {
	locks     sync.Map // clone dir -> *sync.Mutex
	binary    string
	creds     *Credentials
	secrets   *redact.Redactor // the credentials' password
	redactor  *redact.Redactor // the caller's, may be nil
	env       []string
	log       zerolog.Logger
	waitDelay time.Duration
	runAs     *User
	netLimit  time.Duration
	// allProgress reports every progress line of a clone (tests).
	allProgress bool
}

// DefaultNetworkTimeout bounds one network git command.
const DefaultNetworkTimeout = 10 * time.Minute

// New returns a Git configured by opts.
func New(opts Options) *Git {
	g := &Git{
		binary:    opts.Binary,
		redactor:  opts.Redactor,
		log:       opts.Log,
		waitDelay: opts.WaitDelay,
		secrets:   redact.New(),
		runAs:     opts.RunAs,
		netLimit:  opts.NetworkTimeout,
	}
	if g.netLimit <= 0 {
		g.netLimit = DefaultNetworkTimeout
	}
	if g.binary == "" {
		g.binary = "git"
	}
	if g.waitDelay <= 0 {
		g.waitDelay = 5 * time.Second
	}
	if opts.Credentials != nil && opts.RunAs == nil {
		c := *opts.Credentials
		g.creds = &c
		g.secrets.Add(c.Password)
	}
	g.env = baseEnv(os.Environ(), opts.Env)
	return g
}

// inheritedEnv lists the inherited variables (names, or prefixes ending in
// "_") git processes receive. Everything else — the daemon's API tokens
// above all — is withheld: a worktree is shaped by the model, and a hook,
// filter or fsmonitor command it planted in the clone's configuration would
// run with this environment.
var inheritedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "TZ", "XDG_CONFIG_HOME",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
	"http_proxy", "https_proxy", "no_proxy", "GIT_SSH", "GIT_SSH_COMMAND",
	"GIT_SSL_", "GIT_TRACE", "GIT_CURL_VERBOSE", "GIT_CONFIG_GLOBAL",
	"GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_HTTP_",
}

// baseEnv builds the environment of every git process: the allowed part of
// the inherited one (nothing that would redirect git to another repository,
// inject configuration, prompt for a password or leak a secret), then extra,
// then the fixed settings.
func baseEnv(inherited, extra []string) []string {
	env := make([]string, 0, len(inheritedEnv)+len(extra)+2)
	for _, kv := range inherited {
		if keepInherited(kv) {
			env = append(env, kv)
		}
	}
	env = append(env, extra...)
	// Plain C messages make stderr matching reliable; no prompt may ever
	// block a daemon waiting for a password.
	return append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
}

func keepInherited(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	for _, keep := range inheritedEnv {
		if name == keep || (strings.HasSuffix(keep, "_") && strings.HasPrefix(name, keep)) ||
			(keep == "GIT_TRACE" && strings.HasPrefix(name, keep)) {
			return true
		}
	}
	return false
}

// lock takes the mutation lock of the clone at dir and returns its unlock.
func (g *Git) lock(dir string) func() {
	m, _ := g.locks.LoadOrStore(dir, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// redact masks secrets in s.
func (g *Git) redact(s string) string {
	return g.redactor.String(g.secrets.String(s))
}

// call describes one git invocation.
type call struct {
	dir   string
	args  []string
	creds *Credentials // nil: g.creds
	noCfg bool         // run without any credential configuration
	env   []string     // added last, for this call only
	// progress, when set, receives git's --progress lines of a long
	// command (see progressWriter).
	progress func(line string)
}

// run executes git with args in dir and returns its standard output.
func (g *Git) run(ctx context.Context, dir string, args ...string) (string, error) {
	return g.exec(ctx, call{dir: dir, args: args})
}

func (g *Git) exec(ctx context.Context, c call) (string, error) {
	creds := c.creds
	remote := talksToRemote(c.args)
	if creds == nil && !c.noCfg && remote {
		creds = g.creds
	}
	if remote {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.netLimit)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, g.binary, c.args...)
	cmd.Dir = c.dir
	cmd.Env = append(append(append([]string(nil), g.env...), processEnv(creds)...), c.env...)
	var stdout, errBuf bytes.Buffer
	var stderr interface {
		io.Writer
		String() string
	} = &errBuf
	if c.progress != nil {
		pw := newProgressWriter(maxStderr, time.Now, c.progress)
		if g.allProgress {
			pw.quiet, pw.every = 0, 0
		}
		stderr = pw
	}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	killGroup(cmd, g.runAs)
	cmd.WaitDelay = g.waitDelay

	red := g.redact
	if c.creds != nil && c.creds.Password != "" {
		// Per-call credentials (a mirror's) are masked too.
		extra := redact.New(c.creds.Password)
		red = func(s string) string { return extra.String(g.redact(s)) }
	}
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = red(a)
	}

	start := time.Now()
	err := cmd.Run()
	g.log.Debug().Strs("args", args).Str("dir", c.dir).
		Dur(logx.KeyDuration, time.Since(start)).Bool("ok", err == nil).Msg("git")
	if err == nil {
		return stdout.String(), nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = fmt.Errorf("%w (%v)", ctxErr, err)
	}
	msg := strings.TrimSpace(red(stderr.String()))
	if len(msg) > maxStderr {
		msg = strings.ToValidUTF8(msg[:maxStderr], "") + "…"
	}
	return stdout.String(), &Error{Args: args, Stderr: msg, Err: err}
}

// networkCommands are the git subcommands that reach the forge. Only they
// get the credential helper and the password: a command-valued setting the
// model may have planted in a clone's .git/config (a filter driver, an
// external diff) runs during local commands such as checkout or diff, and
// must find no password in its environment.
var networkCommands = map[string]bool{"clone": true, "fetch": true, "push": true, "ls-remote": true, "pull": true}

// talksToRemote reports whether args (git's arguments, after any -c/-C
// options) run a network subcommand.
func talksToRemote(args []string) bool {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-c" || a == "-C":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return networkCommands[a]
		}
	}
	return false
}

// exitCode returns the exit status of a failed git command, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/gateway"
	"github.com/disinto/disinto/lib/provision"
)

// checkEnvFile checks that the env file exists when it was named, and
// that only its owner can read it. It returns its values, or nil.
func checkEnvFile(r *Report, o Options) map[string]string {
	st, err := os.Stat(o.EnvFile)
	switch {
	case errors.Is(err, os.ErrNotExist) && o.EnvFileExplicit:
		r.add(CheckEnvFile, o.EnvFile, Blocking, "the env file does not exist",
			"create it (disinto init writes it), or name the right one with --env-file or DISINTO_ENV_FILE")
		return nil
	case errors.Is(err, os.ErrNotExist):
		r.add(CheckEnvFile, o.EnvFile, OK, "not present: the settings come from the process environment only", "")
		return nil
	case err != nil:
		r.add(CheckEnvFile, o.EnvFile, Blocking, err.Error(), "make the file readable by this user")
		return nil
	case st.IsDir():
		r.add(CheckEnvFile, o.EnvFile, Blocking, "is a directory, not an env file", "name the env file with --env-file or DISINTO_ENV_FILE")
		return nil
	}
	vals, err := config.ReadEnvFile(o.EnvFile)
	if err != nil {
		// The configuration check reports the line.
		vals = nil
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		r.add(CheckEnvFile, o.EnvFile, Blocking, fmt.Sprintf("mode %04o lets other users read the credentials in it", perm), "chmod 600 "+o.EnvFile)
		return vals
	}
	r.add(CheckEnvFile, o.EnvFile, OK, fmt.Sprintf("present, mode %04o", st.Mode().Perm()), "")
	return vals
}

// placeholderPrefix starts the values .env.example ships for secrets
// ("change-me-before-first-start"); exampleAPIKey is its commented
// ANTHROPIC_API_KEY, uncommented as it is.
const (
	placeholderPrefix = "change-me"
	exampleAPIKey     = "sk-ant-..."
)

// isPlaceholder reports whether a secret's value is one .env.example
// ships, which everyone who has read the repository knows.
func isPlaceholder(v string) bool {
	v = strings.TrimSpace(v)
	return v == provision.PlaceholderAdminPassword || strings.HasPrefix(v, placeholderPrefix) || v == exampleAPIKey
}

// checkPlaceholders refuses secrets left at the example's values.
func checkPlaceholders(r *Report, env config.Env) {
	var bad []string
	vals := env.Map()
	for k, v := range vals {
		if config.IsSecretName(k) && isPlaceholder(v) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		r.add(CheckPlaceholder, "", OK, "no secret is left at a value of .env.example", "")
		return
	}
	sortStrings(bad)
	for _, k := range bad {
		r.add(CheckPlaceholder, k, Blocking, "still holds the placeholder of .env.example, which everyone who has read the repository knows",
			"set "+k+" to a value of your own in .env")
	}
}

// checkModel checks that the sessions have model credentials: an API key,
// an OAuth token, or a login in the CLI's config dir; or that a shared
// gateway holds them (DISINTO_GATEWAY_URL), as for replicas that run
// beside `disinto gateway` and hold no model credential of their own.
func checkModel(r *Report, env config.Env) {
	switch {
	case env.Get(gateway.URLEnv) != "":
		r.add(CheckModel, gateway.URLEnv, OK, "the sessions reach the model through the shared gateway at "+env.Get(gateway.URLEnv)+", which holds the credentials", "")
		return
	case env.Get("ANTHROPIC_API_KEY") != "" && !isPlaceholder(env.Get("ANTHROPIC_API_KEY")):
		r.add(CheckModel, "ANTHROPIC_API_KEY", OK, "an API key is set", "")
		return
	case env.Get("CLAUDE_CODE_OAUTH_TOKEN") != "":
		r.add(CheckModel, "CLAUDE_CODE_OAUTH_TOKEN", OK, "an OAuth token is set", "")
		return
	}
	dir := env.Get("CLAUDE_CONFIG_DIR")
	if dir == "" && env.Get("HOME") != "" {
		dir = filepath.Join(env.Get("HOME"), ".claude")
	}
	creds := filepath.Join(dir, ".credentials.json")
	if dir != "" && hasOAuthLogin(creds) {
		r.add(CheckModel, creds, OK, "an OAuth login of the claude CLI", "")
		return
	}
	if base := env.Get("ANTHROPIC_BASE_URL"); base != "" {
		r.add(CheckModel, "ANTHROPIC_BASE_URL", Warning, "no Anthropic credentials: sessions depend on the endpoint "+base+" accepting them without a key", "")
		return
	}
	r.add(CheckModel, "", Blocking, "no model credentials: neither ANTHROPIC_API_KEY nor CLAUDE_CODE_OAUTH_TOKEN is set, and "+creds+" holds no login",
		"set ANTHROPIC_API_KEY, or CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`), in .env; or log in once: docker compose run --rm --no-deps agents claude auth login")
}

// hasOAuthLogin reports whether path is a credentials file the claude CLI
// wrote after a login: JSON with an OAuth access token.
func hasOAuthLogin(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var c struct {
		OAuth struct {
			AccessToken string `json:"accessToken"`
		} `json:"claudeAiOauth"`
	}
	return json.Unmarshal(data, &c) == nil && c.OAuth.AccessToken != ""
}

// Names and defaults of the daemon's status listener (cmd/disinto).
const (
	envStatusListen     = "DISINTO_STATUS_LISTEN"
	envStatusToken      = "DISINTO_STATUS_TOKEN"
	defaultStatusListen = "127.0.0.1:8081"
	minStatusToken      = 16
)

// checkStatusListener finds what would stop the daemon at start: a status
// listener off loopback without a bearer token, or a token too short.
func checkStatusListener(r *Report, env config.Env) {
	addr := env.Get(envStatusListen)
	if addr == "" {
		addr = defaultStatusListen
	}
	token := env.Get(envStatusToken)
	switch {
	case token != "" && len(token) < minStatusToken:
		r.add(CheckStatus, envStatusToken, Blocking, fmt.Sprintf("is shorter than %d characters", minStatusToken), "set a longer random token in .env")
	case token == "" && !loopbackAddr(addr):
		r.add(CheckStatus, addr, Blocking, "listens beyond loopback without a token, which the daemon refuses",
			fmt.Sprintf("set %s (%d characters or more) in .env, or set %s to 127.0.0.1:8081", envStatusToken, minStatusToken, envStatusListen))
	case token != "":
		r.add(CheckStatus, addr, OK, "/status and /metrics require the bearer token", "")
	default:
		r.add(CheckStatus, addr, OK, "loopback only", "")
	}
}

// loopbackAddr reports whether a listen address binds loopback only.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkDataDir checks that the data directory is (or can be made) a
// writable directory with room left.
func checkDataDir(r *Report, o Options) {
	dir, created := o.DataDir, ""
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		parent := filepath.Dir(filepath.Clean(dir))
		for {
			if _, perr := os.Stat(parent); perr == nil || parent == filepath.Dir(parent) {
				break
			}
			parent = filepath.Dir(parent)
		}
		if werr := probeWrite(parent); werr != nil {
			r.add(CheckDataDir, dir, Blocking, "does not exist and cannot be created: "+werr.Error(), "create it writable by the daemon's user, or name another with --data-dir or DISINTO_DATA_DIR")
			return
		}
		dir, created = parent, " (it will be created in "+parent+")"
	} else if err != nil || !st.IsDir() {
		msg := "is not a directory"
		if err != nil {
			msg = err.Error()
		}
		r.add(CheckDataDir, o.DataDir, Blocking, msg, "name a directory with --data-dir or DISINTO_DATA_DIR")
		return
	} else if werr := probeWrite(dir); werr != nil {
		r.add(CheckDataDir, dir, Blocking, "not writable: "+werr.Error(), "make it writable by the daemon's user (chown it)")
		return
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		r.add(CheckDataDir, o.DataDir, Warning, "free space unknown: "+err.Error(), "")
		return
	}
	free := fs.Bavail * uint64(fs.Bsize)
	switch {
	case free < o.MinFree:
		r.add(CheckDataDir, o.DataDir, Blocking, fmt.Sprintf("only %s free, need %s", bytesText(free), bytesText(o.MinFree)), "free space on its file system, or move it to another")
	case free < 2*o.MinFree:
		r.add(CheckDataDir, o.DataDir, Warning, fmt.Sprintf("only %s free", bytesText(free)), "free space on its file system soon")
	default:
		r.add(CheckDataDir, o.DataDir, OK, fmt.Sprintf("writable, %s free%s", bytesText(free), created), "")
	}
}

// probeWrite creates and removes a file in dir.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".disinto-doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// bytesText prints a size in MiB or GiB.
func bytesText(n uint64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// claudeTimeout bounds `claude --version`.
const claudeTimeout = 30 * time.Second

// checkClaude runs `claude --version`.
func checkClaude(ctx context.Context, r *Report, o Options, bin string) {
	if bin == "" {
		bin = "claude"
	}
	ctx, cancel := context.WithTimeout(ctx, claudeTimeout)
	defer cancel()
	out, err := o.RunClaude(ctx, bin, "--version")
	line := strings.TrimSpace(strings.SplitN(strings.TrimSpace(out), "\n", 2)[0])
	if err != nil {
		msg := err.Error()
		if line != "" {
			msg += ": " + line
		}
		r.add(CheckClaude, bin, Blocking, "`"+bin+" --version` failed: "+msg,
			"install the claude CLI (npm package @anthropic-ai/claude-code) on PATH, or point CLAUDE_BIN at it")
		return
	}
	r.add(CheckClaude, bin, OK, line, "")
}

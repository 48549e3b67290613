package git

import (
	"net/url"
	"strconv"
	"strings"
)

// Environment variables the credential helper reads. They are set only in
// the environment of the daemon's git processes that reach the forge.
const (
	EnvUser     = "DISINTO_GIT_USER"
	EnvPassword = "DISINTO_GIT_PASSWORD"
)

// credentialHelper answers git's "get" requests with the user name and
// password from the environment and ignores "store" and "erase". printf, not
// echo: dash's echo would interpret backslashes in a password.
const credentialHelper = `!f() { test "$1" = get || exit 0; test -n "$` + EnvPassword + `" || exit 0; ` +
	`printf 'username=%s\npassword=%s\n' "$` + EnvUser + `" "$` + EnvPassword + `"; }; f`

// Credentials authenticate git over HTTP(S) to one forge. Forgejo does not
// accept API tokens for git pushes over HTTP, so Password is the bot's
// password.
//
// How they reach git: every git process gets a credential helper through
// GIT_CONFIG_COUNT/GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n, scoped to URL, that
// prints the user name and password from EnvUser and EnvPassword, which are
// set in that process's environment only. So the secret is never in argv
// (visible to every user in ps), never in a remote URL (stored in
// .git/config and echoed in git's messages) and never in a file. A
// credential helper is preferred to GIT_ASKPASS because git calls it with
// structured input, only for the configured URL, and without parsing prompt
// texts; and because the helper is a shell function that git runs itself, no
// helper program has to be installed or written to disk.
type Credentials struct {
	// URL is the forge's base URL; only requests to its scheme, host and
	// port receive the credentials, so a mirror on another host never sees
	// them.
	URL      string
	Username string
	Password string
}

// scope returns scheme://host[:port] of c.URL, the key git matches request
// URLs against.
func (c *Credentials) scope() string {
	u, err := url.Parse(c.URL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// config returns the configuration and environment variables that hand c
// to one git process. The first configuration entry empties the helper list,
// so helpers configured elsewhere (a credential store on the host) neither
// answer nor save the password. Both are nil when c is nil or has no usable
// URL.
func (c *Credentials) config() (cfg [][2]string, vars []string) {
	if c == nil {
		return nil, nil
	}
	scope := c.scope()
	if scope == "" {
		return nil, nil
	}
	cfg = [][2]string{
		{"credential.helper", ""},
		{"credential." + scope + ".helper", credentialHelper},
	}
	return cfg, []string{EnvUser + "=" + c.Username, EnvPassword + "=" + c.Password}
}

// hardening is configuration every daemon git process gets: no hooks and no
// fsmonitor, which the model could otherwise plant in the clone it works in
// and have the daemon run. (A filter driver or other command-valued setting
// it writes into .git/config would still run; inheritedEnv keeps the
// daemon's own secrets out of reach of such commands, and the password is
// given only to the network commands, see talksToRemote.)
var hardening = [][2]string{
	{"core.hooksPath", "/dev/null"},
	{"core.fsmonitor", "false"},
}

// processEnv returns the per-process environment for git: the hardening and
// c's configuration through GIT_CONFIG_COUNT and friends (read after all
// configuration files, so they win), and c's variables.
func processEnv(c *Credentials) []string {
	credCfg, vars := c.config()
	cfg := make([][2]string, 0, len(hardening)+len(credCfg))
	cfg = append(append(cfg, hardening...), credCfg...)
	env := append(vars, "GIT_CONFIG_COUNT="+strconv.Itoa(len(cfg)))
	for i, kv := range cfg {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return env
}

// StripCredentials returns rawURL without a user name or password. URLs
// without a scheme (scp-style "git@host:path", local paths) are returned
// unchanged: their user part names an SSH account, not a secret.
func StripCredentials(rawURL string) string {
	if !strings.Contains(rawURL, "://") {
		return rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	u.User = nil
	return u.String()
}

// mirrorCredentials splits credentials embedded in a mirror URL off it, so
// they can be handed to git through the helper instead of argv.
func mirrorCredentials(rawURL string) (string, *Credentials) {
	clean := StripCredentials(rawURL)
	if clean == rawURL {
		return rawURL, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return clean, nil
	}
	pass, _ := u.User.Password()
	return clean, &Credentials{URL: clean, Username: u.User.Username(), Password: pass}
}

// Identity returns the commit identity of a bot: its login as the name and
// <login>@disinto.local as the address; "agent" when login is empty.
func Identity(login string) (name, email string) {
	login = strings.TrimSpace(login)
	if login == "" {
		login = "agent"
	}
	return login, login + "@disinto.local"
}

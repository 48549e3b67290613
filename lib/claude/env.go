package claude

import (
	"fmt"
	"sort"
	"strings"

	"github.com/disinto/disinto/lib/sandbox"
)

// DefaultAllowEnv returns the variables of the daemon's environment that a
// claude process inherits. Everything else is dropped, so vault-only
// secrets (GITHUB_TOKEN, CLAWHUB_TOKEN, forge tokens, ...) never reach the
// model's tools. A trailing '*' matches a prefix.
func DefaultAllowEnv() []string {
	return []string{
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR", "TERM",
		"CLAUDE_CONFIG_DIR", "IS_SANDBOX", "CLAUDE_CODE_MAX_RETRIES",
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	}
}

// forcedEnv is always set: no auto-update, telemetry or error reporting,
// which also keeps start-up fast and offline-safe.
var forcedEnv = map[string]string{
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
	"DISABLE_AUTOUPDATER":                      "1",
}

// reservedPrefixes are controlled by the runner and the backend; an
// Invocation cannot set them.
var reservedPrefixes = []string{"ANTHROPIC_", "CLAUDE_", "IS_SANDBOX", "DISABLE_AUTOUPDATER", "PATH", "HOME"}

// envBuilder assembles a child environment.
type envBuilder struct {
	base   []string // KEY=VALUE, usually os.Environ() of the daemon
	allow  []string
	denied map[string]bool
}

func matchName(pattern, name string) bool {
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(name, p)
	}
	return pattern == name
}

func (b envBuilder) allowed(name string) bool {
	if b.denied[name] {
		return false
	}
	for _, p := range b.allow {
		if matchName(p, name) {
			return true
		}
	}
	return false
}

// gatewayEnv is the model gateway as one run sees it: its URL and the
// run's own key.
type gatewayEnv struct{ url, key string }

// build returns the sorted KEY=VALUE list for one run. With gw, the run
// reaches its model through the gateway alone: no base URL, key, token or
// other ANTHROPIC_ setting of the backend is passed.
func (b envBuilder) build(configDir string, be Backend, extra map[string]string, ws *sandbox.Workspace, gw *gatewayEnv) ([]string, error) {
	env := make(map[string]string)
	for _, kv := range b.base {
		k, v, ok := strings.Cut(kv, "=")
		if ok && b.allowed(k) {
			env[k] = v
		}
	}
	if configDir != "" {
		env["CLAUDE_CONFIG_DIR"] = configDir
	}
	for k, v := range forcedEnv {
		env[k] = v
	}
	for k, v := range isolationEnv {
		env[k] = v
	}
	if ws != nil {
		// The session's home, temp and claude state are its workspace's;
		// nothing of the daemon's own home is named.
		for k, v := range ws.Env() {
			env[k] = v
		}
	}
	// A backend's credentials replace whatever the daemon had, so a local
	// endpoint never receives the Anthropic key.
	switch {
	case gw != nil:
		env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_API_KEY"] = gw.url, gw.key
	default:
		if be.BaseURL != "" {
			env["ANTHROPIC_BASE_URL"] = be.BaseURL
		}
		if be.APIKey != "" {
			env["ANTHROPIC_API_KEY"] = be.APIKey
		}
	}
	for k, v := range be.Env {
		if gw != nil && (strings.HasPrefix(k, "ANTHROPIC_") || k == oauthTokenEnv) {
			continue
		}
		env[k] = v
	}
	for k, v := range extra {
		if err := checkExtraName(k); err != nil {
			return nil, err
		}
		if b.denied[k] {
			return nil, fmt.Errorf("%w: env %s is a secret", ErrInvalid, k)
		}
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

func checkExtraName(k string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Errorf("%w: env name %q", ErrInvalid, k)
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(k, p) {
			return fmt.Errorf("%w: env %s is reserved for the runner", ErrInvalid, k)
		}
	}
	return nil
}

// oauthTokenEnv carries a subscription's token to the CLI; with the
// gateway, only the gateway holds it.
const oauthTokenEnv = "CLAUDE_CODE_OAUTH_TOKEN"

package config

import (
	"slices"
	"strings"
)

// Var is a setting read from the environment: the env file, the encrypted
// env file or the process environment. Vars lists every one, so that
// `disinto config show` can print each with where its value came from,
// and a test can hold the code, .env.example and the README to the list.
type Var struct {
	// Name is the variable; with Prefix, the start of a family of them
	// (FORGE_TOKEN_<NAME>).
	Name   string
	Prefix bool
	// Alias is set on another spelling of a role's variable: the one
	// `disinto init` writes and the docs name.
	Alias string
}

// Secret says whether the value is masked when shown.
func (v Var) Secret() bool {
	return IsSecretName(v.Name) || v.Name == "FORGE_TOKEN_" || v.Name == "FORGE_PASS_"
}

// Matches says whether name is v or one of its family.
func (v Var) Matches(name string) bool {
	if v.Prefix {
		return strings.HasPrefix(name, v.Name) && len(name) > len(v.Name)
	}
	return name == v.Name
}

// settings are the variables that no row of the role table names.
var settings = []Var{
	{Name: "AGENT_ROLES"},
	{Name: "ANTHROPIC_API_KEY"},
	{Name: "ANTHROPIC_BASE_URL"},
	{Name: "CHAT_ANTHROPIC_API_KEY"},
	{Name: "CHAT_LISTEN"},
	{Name: "CHAT_MAX_MESSAGE_BYTES"},
	{Name: "CHAT_MAX_REQUESTS_PER_DAY"},
	{Name: "CHAT_MAX_REQUESTS_PER_HOUR"},
	{Name: "CHAT_MAX_TOKENS_PER_DAY"},
	{Name: "CHAT_MAX_TURNS"},
	{Name: "CHAT_MODEL"},
	{Name: "CHAT_OAUTH_CLIENT_ID"},
	{Name: "CHAT_OAUTH_CLIENT_SECRET"},
	{Name: "CHAT_TIMEOUT"},
	{Name: "CHAT_WORKERS"},
	{Name: "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"},
	{Name: "CLAUDE_BIN"},
	{Name: "CLAUDE_CODE_OAUTH_TOKEN"},
	{Name: "CLAUDE_CONFIG_DIR"},
	{Name: "CLAUDE_IDLE_GRACE"},
	{Name: "CLAUDE_MAX_SESSIONS"},
	{Name: "CLAUDE_MODEL"},
	{Name: "CLAUDE_TIMEOUT"},
	{Name: "DISINTO_ALLOW_UNISOLATED_SESSIONS"},
	{Name: "DISINTO_CHAT_USERS"},
	{Name: "DISINTO_CLAIM_LEASE"},
	{Name: "DISINTO_DATA_DIR"},
	{Name: "DISINTO_DEV_BOT"},
	{Name: "DISINTO_EDGE_ACCESS_LOG"},
	{Name: "DISINTO_EDGE_CHAT"},
	{Name: "DISINTO_EDGE_CHECK_URL"},
	{Name: "DISINTO_EDGE_EMAIL"},
	{Name: "DISINTO_EDGE_FORGE"},
	{Name: "DISINTO_EDGE_HOST"},
	{Name: "DISINTO_EDGE_PORT"},
	{Name: "DISINTO_EDGE_SECRET"},
	{Name: "DISINTO_EDGE_STATUS"},
	{Name: "DISINTO_EDGE_TLS_PORT"},
	{Name: "DISINTO_EDGE_URL"},
	{Name: "DISINTO_ENV_FILE"},
	{Name: "DISINTO_FORGE_TIMEOUT"},
	{Name: "DISINTO_GATEWAY_LISTEN"},
	{Name: "DISINTO_GATEWAY_TOKEN"},
	{Name: "DISINTO_GATEWAY_URL"},
	{Name: "DISINTO_HTTP_READ_TIMEOUT"},
	{Name: "DISINTO_LISTEN"},
	{Name: "DISINTO_LOCAL_BOTS"},
	{Name: "DISINTO_LOG_FORMAT"},
	{Name: "DISINTO_LOG_LEVEL"},
	{Name: "DISINTO_PROJECTS_DIR"},
	{Name: "DISINTO_REPLICAS"},
	{Name: "DISINTO_REPLICA_SLOT"},
	{Name: "DISINTO_REPRODUCE_IMAGE"},
	{Name: "DISINTO_REPRODUCE_NETWORK"},
	{Name: "DISINTO_RUNNER_IMAGE"},
	{Name: "DISINTO_RUNNER_NETWORK"},
	{Name: "DISINTO_SECRETS_DIR"},
	{Name: "DISINTO_SESSION_UID_BASE"},
	{Name: "DISINTO_SESSION_UID_COUNT"},
	{Name: "DISINTO_STATUS_LISTEN"},
	{Name: "DISINTO_STATUS_TOKEN"},
	{Name: "DISINTO_STATUS_URL"},
	{Name: "DISINTO_SYNC_INTERVAL"},
	{Name: "DISINTO_TICK_TIMEOUT"},
	{Name: "DISINTO_UNHEALTHY_AFTER"},
	{Name: "DISINTO_WEBHOOK_SECRET"},
	{Name: "DISINTO_WEBHOOK_URL"},
	{Name: "FORGE_ADMIN_PASS"},
	{Name: "FORGE_ADMIN_TOKEN"},
	{Name: "FORGE_ADMIN_USER"},
	{Name: "FORGE_ADMIN_USERS"},
	{Name: "FORGE_BOT_USERNAMES"},
	{Name: "FORGE_BOT_USER_", Prefix: true},
	{Name: "FORGE_PASS_", Prefix: true},
	{Name: "FORGE_PUBLIC_URL"},
	{Name: "FORGE_TOKEN_", Prefix: true},
	{Name: "FORGE_TOKEN_OVERRIDE"},
	{Name: "FORGE_URL"},
	{Name: "MIRROR_", Prefix: true},
	{Name: "PROJECT_REPO"},
	{Name: "WOODPECKER_SERVER"},
	{Name: "WOODPECKER_TOKEN"},
}

// Vars is every setting read from the environment, sorted by name: the
// fixed ones and those of each row of the role table (its bot's token and
// password variables and its interval). .env.example and the README say
// what each does and its default.
func Vars() []Var {
	out := slices.Clone(settings)
	seen := map[string]bool{}
	for _, v := range out {
		seen[v.Name] = true
	}
	add := func(preferred string, names ...string) {
		for _, name := range names {
			if name != "" && !seen[name] {
				seen[name] = true
				v := Var{Name: name}
				if name != preferred {
					v.Alias = preferred
				}
				out = append(out, v)
			}
		}
	}
	for _, s := range RoleSpecs() {
		add(s.TokenVar(), tokenVars(s.Name)...)
		add(s.PassVar(), passwordVars(s.Name)...)
		add(s.IntervalEnv, s.IntervalEnv)
	}
	slices.SortFunc(out, func(a, b Var) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// VarOf is the registered variable name is, or else the family it
// belongs to (the longest prefix).
func VarOf(name string) (Var, bool) {
	var best Var
	found := false
	for _, v := range Vars() {
		switch {
		case !v.Prefix && v.Name == name:
			return v, true
		case v.Prefix && v.Matches(name) && len(v.Name) > len(best.Name):
			best, found = v, true
		}
	}
	return best, found
}

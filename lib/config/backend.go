package config

import (
	"fmt"
	"net/url"
)

// Backend kinds.
const (
	// BackendAnthropic is Anthropic's API, with ANTHROPIC_API_KEY or the
	// OAuth credentials in CLAUDE_CONFIG_DIR.
	BackendAnthropic = "anthropic"
	// BackendLocal is any endpoint that speaks the Anthropic Messages API
	// at BaseURL (llama-server, vLLM, a LiteLLM proxy in front of an
	// OpenAI-style server).
	BackendLocal = "local"
)

// Backend is one model backend. Concurrency is bounded per backend, not
// per project (AD-002): MaxSessions sessions at once across the daemon.
type Backend struct {
	Name      string
	Kind      string
	BaseURL   string // required for BackendLocal; optional override for BackendAnthropic
	Model     string // default model for sessions on this backend
	APIKey    string // resolved secret; never logged
	APIKeyEnv string // the variable APIKey came from
	// OAuthToken is CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`),
	// the subscription credential of the default backend; never logged.
	OAuthToken  string
	MaxSessions int
	// CompactPct, when set, is the context percentage at which the CLI
	// compacts a session on this backend (CLAUDE_AUTOCOMPACT_PCT_OVERRIDE):
	// a local model's small context window needs it early. The default
	// backend takes it from the daemon's CLAUDE_AUTOCOMPACT_PCT_OVERRIDE.
	CompactPct int
}

// AutoCompactEnv is the CLI variable CompactPct becomes.
const AutoCompactEnv = "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"

// OAuthTokenEnv is the CLI variable of a subscription's OAuth token.
const OAuthTokenEnv = "CLAUDE_CODE_OAUTH_TOKEN"

type fieldMsg struct{ field, msg string }

func (b Backend) validate() []fieldMsg {
	var out []fieldMsg
	switch b.Kind {
	case BackendAnthropic:
	case BackendLocal:
		if b.BaseURL == "" {
			out = append(out, fieldMsg{"base_url", "required for a local backend"})
		}
	default:
		out = append(out, fieldMsg{"kind", fmt.Sprintf("%q is not one of anthropic, local", b.Kind)})
	}
	if b.BaseURL != "" {
		if u, err := url.Parse(b.BaseURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			out = append(out, fieldMsg{"base_url", fmt.Sprintf("%q is not an http(s) URL", b.BaseURL)})
		}
	}
	if b.MaxSessions < 0 {
		out = append(out, fieldMsg{"max_sessions", "must not be negative"})
	}
	return out
}

// backendSet collects backends across all project files: one name, one
// definition.
type backendSet struct {
	defs  map[string]Backend
	from  map[string]string
	wants []backendWant
	// prices are the models' prices, from any project file.
	prices    map[string]Price
	priceFrom map[string]string
}

type backendWant struct {
	name, file, key string
	line            int
}

func newBackendSet(env Env) *backendSet {
	s := &backendSet{defs: map[string]Backend{}, from: map[string]string{}, prices: map[string]Price{}, priceFrom: map[string]string{}}
	max := 1
	if v := env.Get("CLAUDE_MAX_SESSIONS"); v != "" {
		fmt.Sscanf(v, "%d", &max)
	}
	def := Backend{
		Name:        DefaultBackend,
		Kind:        BackendAnthropic,
		BaseURL:     env.Get("ANTHROPIC_BASE_URL"),
		Model:       env.Get("CLAUDE_MODEL"),
		APIKey:      env.Get("ANTHROPIC_API_KEY"),
		APIKeyEnv:   "ANTHROPIC_API_KEY",
		OAuthToken:  env.Get(OAuthTokenEnv),
		MaxSessions: max,
	}
	if v := env.Get(AutoCompactEnv); v != "" {
		fmt.Sscanf(v, "%d", &def.CompactPct)
	}
	s.defs[DefaultBackend] = def
	s.from[DefaultBackend] = "environment"
	return s
}

// add registers b; it returns a message when another file defined the
// same name differently.
func (s *backendSet) add(b Backend, file string) string {
	if old, ok := s.defs[b.Name]; ok {
		if b.Name == DefaultBackend && s.from[b.Name] == "environment" {
			// A file may refine the default backend (e.g. max_sessions).
			if b.APIKeyEnv == "" {
				b.APIKey, b.APIKeyEnv = old.APIKey, old.APIKeyEnv
			}
			if b.BaseURL == "" {
				b.BaseURL = old.BaseURL
			}
			if b.Model == "" {
				b.Model = old.Model
			}
			if b.CompactPct == 0 {
				b.CompactPct = old.CompactPct
			}
			if b.OAuthToken == "" {
				b.OAuthToken = old.OAuthToken
			}
		} else if old != b {
			return fmt.Sprintf("backend %q is defined differently in %s", b.Name, s.from[b.Name])
		}
	}
	s.defs[b.Name] = b
	s.from[b.Name] = file
	return ""
}

func (s *backendSet) want(name, file string, line int, key string) {
	s.wants = append(s.wants, backendWant{name: name, file: file, line: line, key: key})
}

// check reports roles that name undefined backends.
func (s *backendSet) check() Problems {
	var ps Problems
	for _, w := range s.wants {
		if _, ok := s.defs[w.name]; !ok {
			ps = append(ps, &Problem{File: w.file, Line: w.line, Key: w.key, Msg: fmt.Sprintf("backend %q is not defined (define [backends.%s] or [agents.%s])", w.name, w.name, w.name)})
		}
	}
	return ps
}

// Package chat is the web chat with the factory: people who log in with
// their forge account (the forge's OAuth2 provider) and are on the
// allowlist talk to a claude session about the project, from a browser,
// behind the edge (lib/edge). Every request is concurrent (net/http); model
// runs take a slot of a bounded pool, each with its own deadline, in the
// session sandbox every other session runs in, and a conversation goes on
// through its stored claude session id (--resume).
//
// Nothing lives only in memory but the OAuth states of logins under way:
// sessions are signed cookies (the HMAC key is a 0600 file under the data
// dir), rate counters and conversations are files there. POST and DELETE
// need the session's CSRF token. The edge's forward-auth check is answered
// only with the shared secret, and every protected request must carry the
// login the check vouched for, equal to the session's (fail closed).
package chat

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/datadir"
	"github.com/disinto/disinto/lib/edge"
	"github.com/disinto/disinto/lib/sandbox"
)

// Defaults of the limits.
const (
	DefaultWorkers         = 2
	DefaultQueueWait       = 30 * time.Second
	DefaultTimeout         = 5 * time.Minute
	DefaultMaxTurns        = 8
	DefaultMaxMessageBytes = 16 << 10
	DefaultSessionTTL      = 24 * time.Hour
	DefaultPerHour         = 60
	DefaultPerDay          = 500
	DefaultTokensPerDay    = 1_000_000
	// minSecret is the shortest forward-auth secret accepted.
	minSecret = 16
)

// UsersEnv lists, comma-separated, who may use the chat besides the forge
// admin (FORGE_ADMIN_USER).
const UsersEnv = "DISINTO_CHAT_USERS"

// Cookie names.
const (
	sessionCookie = "disinto_chat_session"
	stateCookie   = "disinto_chat_state"
)

// ErrConfig is wrapped by every error of New about its options.
var ErrConfig = errors.New("chat configuration")

// Limits bound what one user may ask for.
type Limits struct {
	// PerHour and PerDay cap the messages of a user; TokensPerDay the
	// model tokens (input and output) of their answers.
	PerHour, PerDay int
	TokensPerDay    int64
}

// Options configures a Server.
type Options struct {
	// DataDir holds the session key, the rate counters, the
	// conversations and their claude session ids; made private (0700).
	DataDir string
	// ForgePublicURL is the forge as browsers reach it (the authorize
	// redirect); ForgeInternalURL as this service reaches it (the token
	// exchange and the user lookup). The internal one defaults to the
	// public one.
	ForgePublicURL, ForgeInternalURL string
	// ClientID and ClientSecret are the forge's OAuth2 application.
	ClientID, ClientSecret string
	// PublicURL is the edge's base URL (http://localhost,
	// https://factory.example.org): the OAuth callback is under it, and an
	// https one makes the cookies Secure.
	PublicURL string
	// AllowedUsers are the forge logins that may chat (case-insensitive);
	// everyone else gets 403.
	AllowedUsers []string
	// ForwardSecret is what the edge sends with every forward-auth check.
	ForwardSecret string

	// Runner runs the model; Sandbox gives each user's sessions their
	// workspace.
	Runner  claude.Runner
	Sandbox *sandbox.Sandbox
	// SystemPrompt returns the system prompt of a user's session (the
	// rendered chat formula).
	SystemPrompt func(user string) (string, error)
	// Model is the model of the sessions ("" the backend's default);
	// MaxTurns the turns of one answer; Timeout its deadline.
	Model    string
	MaxTurns int
	Timeout  time.Duration
	// MaxMessageBytes bounds a message (413 above).
	MaxMessageBytes int
	// Workers is the number of model runs at a time; a request waits at
	// most QueueWait for one (503 after).
	Workers   int
	QueueWait time.Duration
	Limits    Limits
	// SessionTTL is how long a login lasts.
	SessionTTL time.Duration

	// HTTPClient calls the forge; a client with a 10 s timeout when nil.
	HTTPClient *http.Client
	Log        zerolog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Server is the chat service; it is an http.Handler.
type Server struct {
	o       Options
	key     []byte
	allowed map[string]bool
	secure  bool
	states  *stateStore
	rates   *rateStore
	hist    *history
	store   *claude.SessionStore
	slots   chan struct{}
	mux     *http.ServeMux

	busyMu sync.Mutex
	busy   map[string]bool
}

// New checks o, opens the data dir (making the session key on first use)
// and returns the server.
func New(o Options) (*Server, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("chat data dir: %w", err)
	}
	if err := os.Chmod(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("chat data dir: %w", err)
	}
	dir := datadir.ChatAt(o.DataDir)
	key, err := loadKey(dir.Key())
	if err != nil {
		return nil, err
	}
	rates, err := openRates(dir.Rates(), o.Limits)
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, key: key, allowed: map[string]bool{}, secure: strings.HasPrefix(o.PublicURL, "https://"),
		states: newStateStore(), rates: rates, hist: &history{dir: dir.History()},
		store: claude.NewSessionStore(dir.Sessions(), o.Now),
		slots: make(chan struct{}, o.Workers), busy: map[string]bool{}}
	for _, u := range o.AllowedUsers {
		if u = strings.TrimSpace(u); u != "" {
			s.allowed[strings.ToLower(u)] = true
		}
	}
	s.routes()
	return s, nil
}

// defaults fills in the defaults and reports the first missing or bad
// option, naming it.
func (o *Options) defaults() error {
	if o.ForgeInternalURL == "" {
		o.ForgeInternalURL = o.ForgePublicURL
	}
	o.ForgePublicURL = strings.TrimRight(o.ForgePublicURL, "/")
	o.ForgeInternalURL = strings.TrimRight(o.ForgeInternalURL, "/")
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	for _, u := range []struct{ name, v string }{{"forge public URL", o.ForgePublicURL}, {"forge internal URL", o.ForgeInternalURL}, {"public URL", o.PublicURL}} {
		if p, err := url.Parse(u.v); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil {
			return fmt.Errorf("%w: %s %q: want http(s)://host[:port] without credentials", ErrConfig, u.name, u.v)
		}
	}
	switch {
	case o.DataDir == "":
		return fmt.Errorf("%w: no data dir", ErrConfig)
	case o.ClientID == "" || o.ClientSecret == "":
		return fmt.Errorf("%w: no OAuth2 application (CHAT_OAUTH_CLIENT_ID, CHAT_OAUTH_CLIENT_SECRET): run disinto init", ErrConfig)
	case len(o.ForwardSecret) < minSecret:
		return fmt.Errorf("%w: %s must be set, %d characters or more (e.g. openssl rand -hex 24)", ErrConfig, edge.SecretEnv, minSecret)
	case o.Runner == nil || o.Sandbox == nil || o.SystemPrompt == nil:
		return fmt.Errorf("%w: no model runner, sandbox or system prompt", ErrConfig)
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.QueueWait <= 0 {
		o.QueueWait = DefaultQueueWait
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = DefaultMaxTurns
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.Limits.PerHour <= 0 {
		o.Limits.PerHour = DefaultPerHour
	}
	if o.Limits.PerDay <= 0 {
		o.Limits.PerDay = DefaultPerDay
	}
	if o.Limits.TokensPerDay <= 0 {
		o.Limits.TokensPerDay = DefaultTokensPerDay
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// Users are the logins allowed to chat, for status reports.
func (s *Server) Users() []string {
	out := make([]string, 0, len(s.allowed))
	for u := range s.allowed {
		out = append(out, u)
	}
	return out
}

// ServeHTTP implements http.Handler. A path with a dot-dot segment is
// refused before routing (the mux would redirect it to its cleaned form).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for seg := range strings.SplitSeq(r.URL.EscapedPath(), "/") {
		if seg == ".." || seg == "." || strings.EqualFold(seg, "%2e%2e") {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "same-origin")
	s.mux.ServeHTTP(w, r)
}

// routes registers the endpoints.
func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	m.HandleFunc("GET "+edge.VerifyPath, s.verify)
	m.HandleFunc("GET "+edge.LoginPath, s.login)
	m.HandleFunc("GET "+edge.CallbackPath, s.callback)
	m.HandleFunc("GET /chat", s.guard(s.index))
	m.HandleFunc("GET /chat/{$}", s.guard(s.index))
	m.HandleFunc("GET /chat/history", s.guard(s.listHistory))
	m.HandleFunc("GET /chat/history/{id}", s.guard(s.getHistory))
	m.HandleFunc("DELETE /chat/history/{id}", s.guard(s.csrf(s.deleteHistory)))
	m.HandleFunc("POST /chat/new", s.guard(s.csrf(s.newConversation)))
	m.HandleFunc("POST /chat/logout", s.guard(s.csrf(s.logout)))
	m.HandleFunc("POST /chat", s.guard(s.csrf(s.post)))
	m.HandleFunc("POST /chat/{$}", s.guard(s.csrf(s.post)))
	s.mux = m
}

// handler is a protected endpoint: it gets the session's user.
type handler func(w http.ResponseWriter, r *http.Request, sess session)

// guard lets through requests with a valid session and the forwarded
// login of the same user: no session sends the browser to the login; a
// missing or different forwarded login is refused.
func (s *Server) guard(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.session(r)
		if !ok {
			http.Redirect(w, r, edge.LoginPath, http.StatusFound)
			return
		}
		switch fwd := r.Header.Get(edge.UserHeader); {
		case fwd == "":
			http.Error(w, "missing forwarded-user header", http.StatusForbidden)
			return
		case !strings.EqualFold(fwd, sess.User):
			http.Error(w, "user identity mismatch", http.StatusForbidden)
			return
		}
		h(w, r, sess)
	}
}

// verify answers the edge's forward-auth check: 403 without the shared
// secret, 200 with the user for a valid session, else 401 with a page
// that leads to the login.
func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	if !equal(r.Header.Get(edge.SecretHeader), s.o.ForwardSecret) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	sess, ok := s.session(r)
	if !ok {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(loginPage))
		return
	}
	w.Header().Set(edge.UserHeader, sess.User)
	w.WriteHeader(http.StatusOK)
}

// loginPage is what a browser without a session gets through the edge.
const loginPage = `<!doctype html><html><head><meta charset="utf-8"><title>Log in</title>
<meta http-equiv="refresh" content="0; url=` + edge.LoginPath + `"></head>
<body><p>You are not logged in. <a href="` + edge.LoginPath + `">Log in with your forge account</a>.</p></body></html>
`

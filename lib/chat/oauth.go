package chat

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/edge"
)

// OAuth limits.
const (
	stateTTL = 10 * time.Minute
	// maxStates bounds the logins under way, so that a flood of /login
	// requests cannot grow the memory without bound.
	maxStates = 1024
	// maxForgeBody bounds what is read of a forge answer.
	maxForgeBody = 1 << 20
)

// stateStore holds the OAuth states of logins under way, each usable
// once. They are the one thing kept in memory only: a restart costs a
// login under way a retry.
type stateStore struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func newStateStore() *stateStore { return &stateStore{m: map[string]time.Time{}} }

// add records a new state, purging the expired ones; false when too many
// logins are under way.
func (st *stateStore) add(state string, now time.Time) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	for k, exp := range st.m {
		if !now.Before(exp) {
			delete(st.m, k)
		}
	}
	if len(st.m) >= maxStates {
		return false
	}
	st.m[state] = now.Add(stateTTL)
	return true
}

// take consumes state: true only for a known, unexpired state, once.
func (st *stateStore) take(state string, now time.Time) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	exp, ok := st.m[state]
	delete(st.m, state)
	return ok && now.Before(exp)
}

// callbackURL is the redirect URI registered with the forge.
func (s *Server) callbackURL() string { return s.o.PublicURL + edge.CallbackPath }

// CallbackURL is the OAuth2 redirect URI of a chat served at publicURL.
func CallbackURL(publicURL string) string {
	return strings.TrimRight(publicURL, "/") + edge.CallbackPath
}

// login starts the OAuth flow: a fresh state, also in a short-lived
// cookie that ties the callback to this browser, and the redirect to the
// forge's authorize page at its public address.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		http.Error(w, "no randomness", http.StatusInternalServerError)
		return
	}
	state := b64(raw)
	if !s.states.add(state, s.o.Now()) {
		w.Header().Set("Retry-After", "60")
		http.Error(w, "too many logins under way; try again in a minute", http.StatusServiceUnavailable)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: state, Path: edge.CallbackPath, MaxAge: int(stateTTL / time.Second),
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
	q := url.Values{"client_id": {s.o.ClientID}, "redirect_uri": {s.callbackURL()}, "response_type": {"code"}, "state": {state}}
	http.Redirect(w, r, s.o.ForgePublicURL+"/login/oauth/authorize?"+q.Encode(), http.StatusFound)
}

// callback ends the OAuth flow: the state must be known (once) and be
// this browser's; the code is exchanged at the forge's internal address,
// the login looked up with the token (which is then forgotten), checked
// against the allowlist, and the session cookie set.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state, code := q.Get("state"), q.Get("code")
	if state == "" || !s.states.take(state, s.o.Now()) {
		http.Error(w, "unknown or expired login state: start again at "+edge.LoginPath, http.StatusBadRequest)
		return
	}
	if c, err := r.Cookie(stateCookie); err != nil || !equal(c.Value, state) {
		http.Error(w, "this login was started in another browser: start again at "+edge.LoginPath, http.StatusBadRequest)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Path: edge.CallbackPath, MaxAge: -1, HttpOnly: true, Secure: s.secure})
	if code == "" {
		http.Error(w, "the forge sent no authorization code", http.StatusBadRequest)
		return
	}
	login, err := s.forgeLogin(r.Context(), code)
	if err != nil {
		s.o.Log.Warn().Err(err).Msg("chat login failed at the forge")
		http.Error(w, "the forge did not confirm the login", http.StatusBadGateway)
		return
	}
	if !s.allowed[strings.ToLower(login)] {
		s.o.Log.Info().Str("user", login).Msg("chat login refused: not on the allowlist")
		http.Error(w, fmt.Sprintf("%s may not use this chat: ask the factory's operator to add you to DISINTO_CHAT_USERS", login), http.StatusForbidden)
		return
	}
	c, err := s.newSession(login)
	if err != nil {
		http.Error(w, "no session", http.StatusInternalServerError)
		return
	}
	http.SetCookie(w, c)
	s.o.Log.Info().Str("user", login).Msg("chat login")
	http.Redirect(w, r, "/chat/", http.StatusFound)
}

// errForge marks a forge answer that is not what the OAuth flow needs.
var errForge = errors.New("forge OAuth")

// forgeLogin exchanges code for an access token and returns its user's
// login. The token is used for that one lookup only.
func (s *Server) forgeLogin(ctx context.Context, code string) (string, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {s.o.ClientID},
		"client_secret": {s.o.ClientSecret}, "redirect_uri": {s.callbackURL()}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.o.ForgeInternalURL+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := s.forgeJSON(req, &tok); err != nil {
		return "", fmt.Errorf("token exchange: %w", err)
	}
	if tok.AccessToken == "" {
		return "", fmt.Errorf("token exchange: %w: no access_token", errForge)
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, s.o.ForgeInternalURL+"/api/v1/user", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "token "+tok.AccessToken)
	req.Header.Set("Accept", "application/json")
	var me struct {
		Login string `json:"login"`
	}
	if err := s.forgeJSON(req, &me); err != nil {
		return "", fmt.Errorf("user lookup: %w", err)
	}
	if me.Login == "" {
		return "", fmt.Errorf("user lookup: %w: no login", errForge)
	}
	return me.Login, nil
}

// forgeJSON does req and decodes a 200 answer into out; the error names
// the status, never the body (which may echo the code or the secret).
func (s *Server) forgeJSON(req *http.Request, out any) error {
	resp, err := s.o.HTTPClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL holds nothing secret, but say it once
		}
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxForgeBody))
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %w: status %d", req.Method, req.URL.Redacted(), errForge, resp.StatusCode)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: %w: %v", req.Method, req.URL.Redacted(), errForge, err)
	}
	return nil
}

// logout ends the session in this browser (the cookie is signed and
// cannot be revoked elsewhere; it expires with SessionTTL).
func (s *Server) logout(w http.ResponseWriter, _ *http.Request, _ session) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
	w.WriteHeader(http.StatusNoContent)
}

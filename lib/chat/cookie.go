package chat

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"
)

// keySize is the length of the HMAC key of the cookies.
const keySize = 32

// loadKey reads the session key at path, making it (0600) on first use. A
// key readable by others is tightened; a short one is an error.
func loadKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, keySize)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("session key: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return loadKey(path) // another process made it first
		}
		if err != nil {
			return nil, fmt.Errorf("session key: %w", err)
		}
		_, werr := f.Write(key)
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			return nil, fmt.Errorf("session key %s: %w", path, err)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	if len(key) < keySize {
		return nil, fmt.Errorf("session key %s: %d bytes, want %d: delete it to make a new one (everyone is logged out)", path, len(key), keySize)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, fmt.Errorf("session key: %w", err)
		}
	}
	return key, nil
}

// session is what the signed cookie says.
type session struct {
	User    string `json:"u"`
	Expires int64  `json:"e"`
	// Nonce makes each login's CSRF token its own.
	Nonce string `json:"n"`
}

// sign returns payload.mac, both base64url.
func (s *Server) sign(payload []byte) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("session\x00"))
	m.Write(payload)
	return b64(payload) + "." + b64(m.Sum(nil))
}

// newSession returns the cookie of a fresh login of user.
func (s *Server) newSession(user string) (*http.Cookie, error) {
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	exp := s.o.Now().Add(s.o.SessionTTL)
	payload, err := json.Marshal(session{User: user, Expires: exp.Unix(), Nonce: b64(nonce)})
	if err != nil {
		return nil, err
	}
	return &http.Cookie{Name: sessionCookie, Value: s.sign(payload), Path: "/", Expires: exp, MaxAge: int(s.o.SessionTTL / time.Second),
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode}, nil
}

// session returns the valid session of r: a cookie whose signature holds,
// not expired, of a user still on the allowlist.
func (s *Server) session(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	p64, _, ok := strings.Cut(c.Value, ".")
	if !ok {
		return session{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(p64)
	if err != nil || !equal(s.sign(payload), c.Value) {
		return session{}, false
	}
	var sess session
	if json.Unmarshal(payload, &sess) != nil || sess.User == "" || s.o.Now().Unix() >= sess.Expires {
		return session{}, false
	}
	if !s.allowed[strings.ToLower(sess.User)] {
		return session{}, false
	}
	return sess, true
}

// csrfToken is the anti-CSRF token of a session: a MAC of its nonce.
func (s *Server) csrfToken(sess session) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("csrf\x00"))
	m.Write([]byte(sess.Nonce))
	return b64(m.Sum(nil))
}

// csrfHeader carries the token on the UI's requests.
const csrfHeader = "X-CSRF-Token"

// csrf refuses a state-changing request without the session's token in
// the X-CSRF-Token header (a header, so it never lands in a log line).
func (s *Server) csrf(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, sess session) {
		tok := r.Header.Get(csrfHeader)
		if tok == "" || !equal(tok, s.csrfToken(sess)) {
			http.Error(w, "missing or wrong CSRF token", http.StatusForbidden)
			return
		}
		h(w, r, sess)
	}
}

// equal compares in constant time.
func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

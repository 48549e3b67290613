package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
)

// maxLogin bounds what is read of a login file.
const maxLogin = 64 << 10

// DefaultTokenURL is where a subscription login is refreshed.
const DefaultTokenURL = "https://platform.claude.com/v1/oauth/token"

// loginClientID is the OAuth client a subscription login of the CLI was
// issued to, which its refresh must name.
const loginClientID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"

// refreshAhead is how long before its expiry a login is refreshed.
const refreshAhead = 5 * time.Minute

// loginFile is a subscription login the CLI wrote (its .credentials.json).
// It is read again whenever the file changes, so a login made on the host
// updates the gateway's credential too. The gateway alone refreshes it:
// once, under a lock on the file's directory that every gateway sharing
// the file takes (several containers may mount it), and the refreshed
// login is written back in place, keeping the fields it does not know.
type loginFile struct {
	path     string
	tokenURL string
	client   *http.Client
	now      func() time.Time

	mu      sync.Mutex
	mod     time.Time
	size    int64
	token   string
	expires time.Time // zero: unknown
}

// oauthLogin is the part of the CLI's login file the gateway uses.
type oauthLogin struct {
	AccessToken  string `json:"accessToken"`
	RefreshToken string `json:"refreshToken"`
	// ExpiresAt is in milliseconds since the epoch.
	ExpiresAt int64 `json:"expiresAt"`
}

// accessToken returns the login's access token, refreshed first when it
// expires within refreshAhead.
func (f *loginFile) accessToken(ctx context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.readLocked(); err != nil {
		return "", err
	}
	if f.expires.IsZero() || f.now().Add(refreshAhead).Before(f.expires) {
		return f.token, nil
	}
	return f.refreshLocked(ctx, f.token)
}

// rejected says the backend refused stale: unless the file already holds
// another token, the login is refreshed, and the token to retry with is
// returned.
func (f *loginFile) rejected(ctx context.Context, stale string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.readLocked(); err != nil {
		return "", err
	}
	if f.token != stale {
		return f.token, nil
	}
	return f.refreshLocked(ctx, stale)
}

// readLocked reads the file when it changed since it was last read. f.mu
// is held.
func (f *loginFile) readLocked() error {
	fi, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("login %s: %w", f.path, err)
	}
	if f.token != "" && fi.ModTime().Equal(f.mod) && fi.Size() == f.size {
		return nil
	}
	_, l, err := f.load()
	if err != nil {
		return err
	}
	f.token, f.mod, f.size, f.expires = l.AccessToken, fi.ModTime(), fi.Size(), expiry(l.ExpiresAt)
	return nil
}

// load reads the whole login file and its OAuth part.
func (f *loginFile) load() (map[string]json.RawMessage, oauthLogin, error) {
	var doc map[string]json.RawMessage
	var l oauthLogin
	data, err := readBounded(f.path, maxLogin)
	if err == nil {
		err = json.Unmarshal(data, &doc)
	}
	if err == nil {
		err = json.Unmarshal(doc["claudeAiOauth"], &l)
	}
	if err == nil && l.AccessToken == "" {
		err = errors.New("no claudeAiOauth.accessToken")
	}
	if err != nil {
		return nil, l, fmt.Errorf("login %s: %w", f.path, err)
	}
	return doc, l, nil
}

// refreshLocked refreshes the login unless another gateway sharing the
// file did since stale was read, and returns the current token. f.mu is
// held.
func (f *loginFile) refreshLocked(ctx context.Context, stale string) (string, error) {
	unlock, err := lockDir(filepath.Dir(f.path))
	if err != nil {
		return "", fmt.Errorf("login %s: %w", f.path, err)
	}
	defer unlock()
	doc, l, err := f.load()
	if err != nil {
		return "", err
	}
	exp := expiry(l.ExpiresAt)
	if l.AccessToken != stale && (exp.IsZero() || f.now().Add(refreshAhead).Before(exp)) {
		// Refreshed meanwhile, by another gateway or a login on the host.
		return f.adopt(l)
	}
	if l.RefreshToken == "" {
		return "", fmt.Errorf("login %s: expired, and it holds no refresh token: log in again", f.path)
	}
	fresh, err := f.exchange(ctx, l.RefreshToken)
	if err != nil {
		return "", fmt.Errorf("login %s: refresh: %w", f.path, err)
	}
	var oauth map[string]json.RawMessage
	if err := json.Unmarshal(doc["claudeAiOauth"], &oauth); err != nil {
		return "", fmt.Errorf("login %s: %w", f.path, err)
	}
	for k, v := range map[string]any{"accessToken": fresh.AccessToken, "refreshToken": fresh.RefreshToken, "expiresAt": fresh.ExpiresAt} {
		oauth[k], _ = json.Marshal(v)
	}
	doc["claudeAiOauth"], _ = json.Marshal(oauth)
	data, _ := json.Marshal(doc)
	if err := atomicfile.Write(f.path, data, 0o600); err != nil {
		return "", fmt.Errorf("login %s: keep the refreshed login: %w", f.path, err)
	}
	return f.adopt(fresh)
}

// adopt makes l the login in use, as the file now holds it.
func (f *loginFile) adopt(l oauthLogin) (string, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return "", fmt.Errorf("login %s: %w", f.path, err)
	}
	f.token, f.mod, f.size, f.expires = l.AccessToken, fi.ModTime(), fi.Size(), expiry(l.ExpiresAt)
	return f.token, nil
}

// exchange trades a refresh token for a new login at the token endpoint.
func (f *loginFile) exchange(ctx context.Context, refresh string) (oauthLogin, error) {
	body, _ := json.Marshal(map[string]string{"grant_type": "refresh_token", "refresh_token": refresh, "client_id": loginClientID})
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.tokenURL, bytes.NewReader(body))
	if err != nil {
		return oauthLogin{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return oauthLogin{}, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxLogin))
	if resp.StatusCode != http.StatusOK {
		// The answer may echo a token: only its status is told.
		return oauthLogin{}, fmt.Errorf("the token endpoint answered %s", resp.Status)
	}
	var out struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.AccessToken == "" {
		return oauthLogin{}, errors.New("the token endpoint's answer holds no access token")
	}
	l := oauthLogin{AccessToken: out.AccessToken, RefreshToken: out.RefreshToken}
	if l.RefreshToken == "" {
		l.RefreshToken = refresh
	}
	if out.ExpiresIn > 0 {
		l.ExpiresAt = f.now().Add(time.Duration(out.ExpiresIn) * time.Second).UnixMilli()
	}
	return l, nil
}

// expiry is a login's expiresAt as a time; zero when unknown.
func expiry(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// lockDir takes an exclusive lock on dir's login lock file, which every
// gateway sharing the login takes before refreshing it.
func lockDir(dir string) (unlock func(), err error) {
	lf, err := os.OpenFile(filepath.Join(dir, ".credentials.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		_ = lf.Close()
		return nil, err
	}
	return func() { _ = lf.Close() }, nil
}

// readBounded reads at most limit bytes of path, refusing a larger file.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("larger than %d bytes", limit)
	}
	return data, err
}

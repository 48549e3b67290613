package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// maxLogin bounds what is read of a login file.
const maxLogin = 64 << 10

// loginFile is a subscription login the CLI wrote (its .credentials.json),
// read again whenever the file changes: whoever logs in on the host (or
// refreshes the login there) updates the gateway's credential too.
type loginFile struct {
	path string

	mu    sync.Mutex
	mod   time.Time
	size  int64
	token string
}

// login is the part of the CLI's login file the gateway uses.
type login struct {
	OAuth struct {
		AccessToken string `json:"accessToken"`
	} `json:"claudeAiOauth"`
}

// accessToken returns the login's access token.
func (f *loginFile) accessToken() (string, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return "", fmt.Errorf("login %s: %w", f.path, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.token != "" && fi.ModTime().Equal(f.mod) && fi.Size() == f.size {
		return f.token, nil
	}
	data, err := readBounded(f.path, maxLogin)
	if err != nil {
		return "", fmt.Errorf("login %s: %w", f.path, err)
	}
	var l login
	if err := json.Unmarshal(data, &l); err != nil {
		return "", fmt.Errorf("login %s: %w", f.path, err)
	}
	if l.OAuth.AccessToken == "" {
		return "", fmt.Errorf("login %s: %w", f.path, errors.New("no claudeAiOauth.accessToken"))
	}
	f.token, f.mod, f.size = l.OAuth.AccessToken, fi.ModTime(), fi.Size()
	return f.token, nil
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

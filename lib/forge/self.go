package forge

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Self remembers the login of the identity an agent acts as, asked of the
// forge once (the first call that succeeds). The zero value is ready to
// use and safe for concurrent use.
type Self struct {
	mu    sync.Mutex
	login string
}

// Login returns the login, asking me for it until it has one. An empty
// login is an error: an agent that cannot tell its own comments and pull
// requests from others' must not act.
func (s *Self) Login(ctx context.Context, me func(context.Context) (User, error)) (string, error) {
	s.mu.Lock()
	login := s.login
	s.mu.Unlock()
	if login != "" {
		return login, nil
	}
	u, err := me(ctx)
	if err != nil {
		return "", fmt.Errorf("resolve own identity: %w", err)
	}
	if u.Login == "" {
		return "", errors.New("resolve own identity: empty login")
	}
	s.mu.Lock()
	s.login = u.Login
	s.mu.Unlock()
	return u.Login, nil
}

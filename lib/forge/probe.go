package forge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// ErrMissingScope means the token authenticates but lacks a scope the
// call needs: the forge answers 403 naming the required scopes.
var ErrMissingScope = errors.New("forge: token lacks a required scope")

// scopeMessage is how Gitea and Forgejo word the 403 of a scoped token
// that lacks a scope ("token does not have at least one of required
// scope(s): [write:issue]").
const scopeMessage = "required scope"

// ServerVersion returns the version the forge reports (GET /version), e.g.
// "1.26.0" for Gitea or "11.0.1+gitea-1.22.0" for Forgejo.
func (c *Client) ServerVersion(ctx context.Context) (string, error) {
	var v struct {
		Version string `json:"version"`
	}
	if err := c.do(ctx, http.MethodGet, "/version", nil, nil, &v); err != nil {
		return "", err
	}
	return v.Version, nil
}

// Answers checks, once and without retries, that the forge at url answers
// GET /version within timeout. A one-shot command asks it before work
// that would retry every request against a forge that is down or silent,
// and says in one line that the forge does not answer.
func Answers(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := New(Options{URL: url, HTTPClient: &http.Client{Timeout: timeout}, MaxRetries: -1})
	if err != nil {
		return err
	}
	_, err = c.ServerVersion(ctx)
	switch {
	case err == nil, errors.Is(err, ErrUnauthorized), errors.Is(err, ErrForbidden):
		return nil // it answered
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("forge %s does not answer within %s (DISINTO_FORGE_TIMEOUT)", url, timeout)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("forge %s does not answer within %s (DISINTO_FORGE_TIMEOUT)", url, timeout)
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return fmt.Errorf("forge %s does not answer: %s %s: %v", url, op.Op, op.Addr, op.Err)
	}
	return fmt.Errorf("forge %s does not answer: %v", url, err)
}

// BranchAccess is how a branch is protected, as the calling identity sees
// it: readable by any collaborator, unlike the protection rule itself,
// which only a repository admin may read.
type BranchAccess struct {
	Protected         bool
	RequiredApprovals int64
	// UserCanPush and UserCanMerge are what the rule allows the caller.
	UserCanPush  bool
	UserCanMerge bool
}

// BranchAccess reads branch name's protection as the client's user sees
// it.
func (r *RepoClient) BranchAccess(ctx context.Context, name string) (BranchAccess, error) {
	var b struct {
		Protected         bool  `json:"protected"`
		RequiredApprovals int64 `json:"required_approvals"`
		UserCanPush       bool  `json:"user_can_push"`
		UserCanMerge      bool  `json:"user_can_merge"`
	}
	if err := r.c.do(ctx, http.MethodGet, r.path("/branches/%s", escapePath(name)), nil, nil, &b); err != nil {
		return BranchAccess{}, err
	}
	return BranchAccess{Protected: b.Protected, RequiredApprovals: b.RequiredApprovals, UserCanPush: b.UserCanPush, UserCanMerge: b.UserCanMerge}, nil
}

// scopeProbes are, per scope, a call that needs exactly that scope and
// changes nothing: reads, and writes aimed at objects that cannot exist
// (number 0), which the forge answers 404 once the token's scope has been
// checked, and 403 before when the scope is missing.
var scopeProbes = map[string]struct{ method, path string }{
	ScopeReadUser:        {http.MethodGet, "/user"},
	ScopeReadRepository:  {http.MethodGet, ""},
	ScopeWriteRepository: {http.MethodPatch, "/pulls/0"},
	ScopeReadIssue:       {http.MethodGet, "/issues/comments/0"},
	ScopeWriteIssue:      {http.MethodPatch, "/issues/comments/0"},
}

// ProbeScope checks that the client's token holds scope, on this
// repository, without changing anything. It returns nil when it does, an
// error wrapping ErrMissingScope when the forge refuses the token for the
// scope, and any other failure (a rejected token, an unreachable forge)
// as it is. Only the scopes provisioning grants can be probed.
func (r *RepoClient) ProbeScope(ctx context.Context, scope string) error {
	p, ok := scopeProbes[scope]
	if !ok {
		return fmt.Errorf("probe scope %q: %w: no probe for this scope", scope, ErrInvalid)
	}
	path := r.path("%s", p.path)
	if scope == ScopeReadUser {
		path = p.path
	}
	var in any
	if p.method != http.MethodGet {
		in = map[string]any{}
	}
	err := r.c.do(ctx, p.method, path, nil, in, nil)
	var se *StatusError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &se):
		return err
	case se.Status == http.StatusForbidden && strings.Contains(strings.ToLower(se.Message), scopeMessage):
		return fmt.Errorf("%w: %s: %w", ErrMissingScope, scope, err)
	case se.Status == http.StatusUnauthorized || se.Status >= 500:
		return err
	}
	// Not found, invalid, or forbidden for want of permission: the scope
	// check came first and passed.
	return nil
}

package forge

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/disinto/disinto/lib/text"
)

// Sentinel errors returned (wrapped) by Client methods; check with errors.Is.
var (
	// ErrNotFound means the object does not exist or is not visible.
	ErrNotFound = errors.New("forge: not found")
	// ErrConflict means the request conflicts with the current state.
	ErrConflict = errors.New("forge: conflict")
	// ErrForbidden means the identity lacks permission.
	ErrForbidden = errors.New("forge: forbidden")
	// ErrUnauthorized means the token or password was rejected. It is
	// permanent: retrying cannot help.
	ErrUnauthorized = errors.New("forge: unauthorized")
	// ErrInvalid means the server rejected the request as malformed (422/400).
	ErrInvalid = errors.New("forge: invalid request")
	// ErrUnavailable means the server kept failing with 429/5xx or network
	// errors until the retry budget ran out.
	ErrUnavailable = errors.New("forge: unavailable")
	// ErrMergeBlocked means the merge was refused by branch protection,
	// permissions or mergeability checks.
	ErrMergeBlocked = errors.New("forge: merge blocked")
	// ErrMergePending means the forge was still checking whether the pull
	// request can be merged, through every retry: nothing is wrong with
	// it yet, the merge is only to be tried again later.
	ErrMergePending = errors.New("forge: mergeability check pending")
	// ErrHeadMoved means the pull request head differs from the expected SHA.
	ErrHeadMoved = errors.New("forge: pull request head moved")
	// ErrAlreadyMerged means the pull request was already merged.
	ErrAlreadyMerged = errors.New("forge: already merged")
	// ErrMergeLanded means the pull request's head is on the base branch
	// although the forge never recorded the merge (a merge cut short
	// after its push), and the forge refused to record it afterwards. The
	// change is merged; the pull request is still open. See LandedError.
	ErrMergeLanded = errors.New("forge: merged but not recorded")
	// ErrClaimed means another identity holds the issue.
	ErrClaimed = errors.New("forge: issue claimed by someone else")
	// ErrPageCap means a list exceeded the hard page cap; the results
	// returned alongside it are truncated.
	ErrPageCap = errors.New("forge: page cap reached")
)

// StatusError carries the HTTP status and server message of a failed call.
// It unwraps to the sentinel matching the status.
type StatusError struct {
	Method  string
	Path    string
	Status  int
	Message string
	// User is the identity the call was made as, for error messages.
	User string
}

// Error describes the failed call without any credentials.
func (e *StatusError) Error() string {
	msg := e.Message
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	who := ""
	if e.User != "" {
		who = " as " + e.User
	}
	if e.Status == http.StatusUnauthorized {
		return fmt.Sprintf("%s %s%s: HTTP 401: token rejected, check the credentials of %q", e.Method, e.Path, who, e.User)
	}
	if msg == "" {
		return fmt.Sprintf("%s %s%s: HTTP %d", e.Method, e.Path, who, e.Status)
	}
	return fmt.Sprintf("%s %s%s: HTTP %d: %s", e.Method, e.Path, who, e.Status, msg)
}

// Unwrap returns the sentinel for the status.
func (e *StatusError) Unwrap() error { return sentinelFor(e.Status) }

// sentinelFor is the one place mapping HTTP statuses to sentinels.
func sentinelFor(status int) error {
	switch {
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusConflict:
		return ErrConflict
	case status == http.StatusForbidden:
		return ErrForbidden
	case status == http.StatusUnauthorized:
		return ErrUnauthorized
	case status == http.StatusUnprocessableEntity || status == http.StatusBadRequest:
		return ErrInvalid
	case status == http.StatusTooManyRequests || status >= 500:
		return ErrUnavailable
	}
	return nil
}

// messageOf extracts the "message" of a Gitea JSON error body, or the body.
func messageOf(body []byte) string {
	s := strings.TrimSpace(string(body))
	if i := strings.Index(s, `"message":"`); i >= 0 {
		rest := s[i+len(`"message":"`):]
		if j := strings.Index(rest, `"`); j >= 0 {
			return rest[:j]
		}
	}
	return s
}

// LandedError reports a merge that reached the base branch but that the
// forge did not record and refused to record afterwards: SHA is the commit
// of the base branch that brought the head in. It matches ErrMergeLanded.
type LandedError struct {
	PR  int64
	SHA string
	Err error
}

// Error names the pull request and the commit.
func (e *LandedError) Error() string {
	return fmt.Sprintf("pull request #%d: its head is on the base branch as %s, but the forge did not record the merge: %v",
		e.PR, text.ShortSHA(e.SHA), e.Err)
}

// Is matches ErrMergeLanded.
func (e *LandedError) Is(target error) bool { return target == ErrMergeLanded }

// Unwrap returns the forge's refusal to record the merge.
func (e *LandedError) Unwrap() error { return e.Err }

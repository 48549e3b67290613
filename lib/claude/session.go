package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
)

// Session is what the store keeps about one conversation.
type Session struct {
	// ID is the claude session id (a UUID).
	ID string `json:"id"`
	// Dir is the working directory of the conversation; --resume only
	// works from the same directory.
	Dir string `json:"dir"`
	// UpdatedAt is when the id was last replaced.
	UpdatedAt time.Time `json:"updated_at"`
}

// SessionKey names a conversation: one per project and subject (e.g.
// "issue-42", "pr-7", "planner").
type SessionKey struct {
	Project string
	Subject string
}

var (
	uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// ValidSessionID reports whether id looks like a claude session id.
func ValidSessionID(id string) bool { return uuidRe.MatchString(id) }

// SessionStore keeps session ids under
// <stateDir>/<project>/sessions/<subject>.json, written atomically.
type SessionStore struct {
	stateDir string
	now      func() time.Time
}

// NewSessionStore returns a store rooted at the data dir's state
// directory; now is the clock (time.Now when nil).
func NewSessionStore(stateDir string, now func() time.Time) *SessionStore {
	if now == nil {
		now = time.Now
	}
	return &SessionStore{stateDir: stateDir, now: now}
}

func (s *SessionStore) path(k SessionKey) (string, error) {
	if !nameRe.MatchString(k.Project) || !nameRe.MatchString(k.Subject) {
		return "", fmt.Errorf("%w: session key %q/%q", ErrInvalid, k.Project, k.Subject)
	}
	return filepath.Join(s.stateDir, k.Project, "sessions", k.Subject+".json"), nil
}

// Load returns the stored session; ok is false when there is none. A
// corrupt file or an invalid id yields an error wrapping
// ErrSessionNotFound.
func (s *SessionStore) Load(k SessionKey) (sess Session, ok bool, err error) {
	p, err := s.path(k)
	if err != nil {
		return Session{}, false, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, fmt.Errorf("read session: %w", err)
	}
	if json.Unmarshal(b, &sess) != nil || !ValidSessionID(sess.ID) {
		return Session{}, false, fmt.Errorf("%w: unusable session file %s", ErrSessionNotFound, p)
	}
	return sess, true, nil
}

// Save stores id for k (temp file, fsync, rename).
func (s *SessionStore) Save(k SessionKey, id, dir string) error {
	if !ValidSessionID(id) {
		return fmt.Errorf("%w: session id %q", ErrInvalid, id)
	}
	p, err := s.path(k)
	if err != nil {
		return err
	}
	b, err := json.Marshal(Session{ID: id, Dir: dir, UpdatedAt: s.now().UTC()})
	if err != nil {
		return fmt.Errorf("encode session: %w", err)
	}
	return writeSession(p, b)
}

// Delete forgets the session of k.
func (s *SessionStore) Delete(k SessionKey) error {
	p, err := s.path(k)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// Continue runs inv as the next step of the conversation stored for k: it
// resumes the stored session when there is one for inv.Dir; when the CLI
// no longer knows it, the stored id is unusable or was made in another
// directory, it starts a fresh session whose prompt begins with recovery,
// a summary of the story so far supplied by the caller. With nothing
// stored, inv runs as given. A run that produced a result replaces the stored
// id. inv.ResumeID is ignored.
func Continue(ctx context.Context, r Runner, store *SessionStore, k SessionKey, inv Invocation, recovery string) (Result, error) {
	sess, ok, err := store.Load(k)
	lost := errors.Is(err, ErrSessionNotFound) || ok && sess.Dir != inv.Dir
	if err != nil && !lost {
		return Result{}, err
	}
	inv.ResumeID = ""
	fresh := inv
	if recovery != "" {
		fresh.Prompt = recovery + "\n\n" + inv.Prompt
	}
	var res Result
	switch {
	case ok && !lost:
		inv.ResumeID = sess.ID
		res, err = r.Run(ctx, inv)
		if errors.Is(err, ErrSessionNotFound) {
			res, err = r.Run(ctx, fresh)
		}
	case lost:
		res, err = r.Run(ctx, fresh)
	default:
		res, err = r.Run(ctx, inv)
	}
	if res.HasResult && ValidSessionID(res.SessionID) && !errors.Is(err, ErrSessionNotFound) {
		if serr := store.Save(k, res.SessionID, inv.Dir); serr != nil {
			return res, errors.Join(err, serr)
		}
	}
	return res, err
}

func writeSession(p string, b []byte) error {
	if err := atomicfile.Write(p, b, 0o600); err != nil {
		return fmt.Errorf("write session: %w", err)
	}
	return nil
}

package chat

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// History limits.
const (
	// maxConversations bounds a listing.
	maxConversations = 200
	// maxRecordBytes bounds one line read back.
	maxRecordBytes = 1 << 20
	// previewRunes is how much of a conversation's first message a
	// listing shows.
	previewRunes = 50
)

var (
	convRe  = regexp.MustCompile(`^[0-9a-f]{12}$`)
	loginRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
)

// Record is one message of a conversation, one JSON line of its file.
type Record struct {
	TS      time.Time `json:"ts"`
	User    string    `json:"user"`
	Role    string    `json:"role"`
	Content string    `json:"content"`
}

// Roles of a record.
const (
	roleUser      = "user"
	roleAssistant = "assistant"
)

// Summary is a conversation in a listing.
type Summary struct {
	ID           string    `json:"id"`
	CreatedAt    time.Time `json:"created_at"`
	Preview      string    `json:"preview"`
	MessageCount int       `json:"message_count"`
}

// history keeps conversations as <dir>/<login>/<id>.ndjson, append-only.
type history struct{ dir string }

// errNoConversation is a conversation that does not exist.
var errNoConversation = errors.New("no such conversation")

// newID returns a fresh conversation id.
func newID() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func (h *history) userDir(user string) (string, error) {
	if !loginRe.MatchString(user) {
		return "", fmt.Errorf("login %q cannot name a directory", user)
	}
	return filepath.Join(h.dir, strings.ToLower(user)), nil
}

func (h *history) path(user, id string) (string, error) {
	if !convRe.MatchString(id) {
		return "", fmt.Errorf("conversation id %q", id)
	}
	d, err := h.userDir(user)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, id+".ndjson"), nil
}

// append adds rec to conversation id of user.
func (h *history) append(id string, rec Record) (err error) {
	p, err := h.path(rec.User, id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// read returns the records of conversation id of user.
func (h *history) read(user, id string) ([]Record, error) {
	p, err := h.path(user, id)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoConversation
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxRecordBytes)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("history %s: %w", p, err)
	}
	return out, nil
}

// remove deletes conversation id of user.
func (h *history) remove(user, id string) error {
	p, err := h.path(user, id)
	if err != nil {
		return err
	}
	if err := os.Remove(p); errors.Is(err, fs.ErrNotExist) {
		return errNoConversation
	} else if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// list summarises user's conversations, newest first.
func (h *history) list(user string) ([]Summary, error) {
	d, err := h.userDir(user)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(d)
	if errors.Is(err, fs.ErrNotExist) {
		return []Summary{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	out := []Summary{}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".ndjson")
		if !ok || !convRe.MatchString(id) {
			continue
		}
		recs, err := h.read(user, id)
		if err != nil || len(recs) == 0 {
			continue
		}
		out = append(out, Summary{ID: id, CreatedAt: recs[0].TS, Preview: preview(recs[0].Content), MessageCount: len(recs)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	if len(out) > maxConversations {
		out = out[:maxConversations]
	}
	return out, nil
}

// preview is the start of a message for a listing.
func preview(s string) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= previewRunes {
		return string(r)
	}
	return string(r[:previewRunes]) + "..."
}

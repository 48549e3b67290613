package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/sandbox"
)

// Defaults of a digest session and of its retries.
const (
	DefaultDigestTurns   = 12
	DefaultDigestTimeout = 5 * time.Minute
	// digestBackoffBase and digestBackoffMax bound the wait after a failed
	// digest: it doubles per failure in a row.
	digestBackoffBase = time.Minute
	digestBackoffMax  = 6 * time.Hour
)

// ErrDigestFailed wraps why a digest produced no lessons.
var ErrDigestFailed = errors.New("digest failed")

// DigestOptions configures a Digester.
type DigestOptions struct {
	// Bot is the bot whose journal is digested.
	Bot string
	// Repo is the checkout of the bot's .profile repository.
	Repo *ops.Repo
	// Formula is the digest formula.
	Formula *formula.Formula
	// Claude runs the session; Sandbox gives it a workspace of its own.
	Claude  claude.Runner
	Sandbox *sandbox.Sandbox
	// Bound is how many undigested bytes start a digest;
	// DefaultDigestBound when 0.
	Bound int64
	// MaxTurns and Timeout bound the session; defaults when 0.
	MaxTurns int
	Timeout  time.Duration
	// Model and Backend select the model.
	Model, Backend string
	// Redactor masks secrets in the journal text shown to the session.
	Redactor *redact.Redactor
	Log      zerolog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Digester turns a bot's journal into its lessons: when the entries not
// yet digested pass the bound, one bounded session reads them and writes
// new lessons to its outbox; the daemon validates them, merges them into
// the lessons file (capped, deduplicated, newest first) and commits the
// file with the digest's bookkeeping. It is safe for concurrent use.
type Digester struct {
	o DigestOptions

	mu       sync.Mutex
	failures int
	next     time.Time // no attempt before this, after a failure
	last     time.Time // when the last digest landed
	failing  string
	// unsaved holds the checked lessons of a session whose commit failed,
	// by the journal text they digest.
	unsaved map[string]string
}

// NewDigester returns the digester of o.Bot.
func NewDigester(o DigestOptions) *Digester {
	if o.Bound <= 0 {
		o.Bound = DefaultDigestBound
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = DefaultDigestTurns
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultDigestTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Model == "" && o.Formula != nil {
		o.Model = o.Formula.Model
	}
	return &Digester{o: o}
}

// RetryAt is when a digest that failed may be tried again; zero when
// none failed.
func (d *Digester) RetryAt() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failures == 0 {
		return time.Time{}
	}
	return d.next
}

// Maybe digests the journal when it passed the bound, reading the
// checkout as last fetched. It reports whether lessons landed; an error
// means a digest was due and failed (it is retried with backoff).
func (d *Digester) Maybe(ctx context.Context) (bool, error) {
	d.mu.Lock()
	wait := d.failures > 0 && d.o.Now().Before(d.next)
	d.mu.Unlock()
	if wait {
		return false, nil
	}
	files, head, err := d.o.Repo.Local(ctx)
	if err != nil || head == "" {
		return false, err
	}
	list, err := files.List("journal")
	if err != nil {
		return false, err
	}
	st, err := readDigestState(files)
	if err != nil {
		return false, err
	}
	if Undigested(list, st) < d.o.Bound {
		return false, nil
	}
	err = d.digest(ctx, files, list, st)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.failures++
		d.next = d.o.Now().Add(min(digestBackoffBase<<min(d.failures-1, 16), digestBackoffMax))
		if d.failures == 1 {
			d.o.Log.Warn().Str("bot", d.o.Bot).Str("error", err.Error()).Time("retry", d.next).Msg("journal digest failed; retrying with backoff")
		}
		d.failing = err.Error()
		return false, err
	}
	d.failures, d.failing, d.last = 0, "", d.o.Now()
	return true, nil
}

// digest runs one session over the undigested entries and commits the
// lessons it wrote.
func (d *Digester) digest(ctx context.Context, files ops.Files, list []git.TreeFile, st DigestState) error {
	input, want, err := DigestInput(list, st, files.Read, MaxDigestInput)
	if err != nil || input == "" {
		return err
	}
	current, err := files.Read(LessonsFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// Lessons whose commit failed are committed again, not asked for again.
	d.mu.Lock()
	fresh := d.unsaved[input]
	d.mu.Unlock()
	log := d.o.Log.With().Str("bot", d.o.Bot).Logger()
	if fresh == "" {
		var res claude.Result
		if fresh, res, err = d.session(ctx, input, string(current)); err != nil {
			return err
		}
		log = log.With().Str("session", res.SessionID).Float64("cost_usd", res.CostUSD).Int("turns", res.NumTurns).Logger()
		d.mu.Lock()
		d.unsaved = map[string]string{input: fresh}
		d.mu.Unlock()
	}
	sha, err := d.o.Repo.Commit(ctx, "lessons: digest of the journal of "+d.o.Bot, func(f ops.Files) ([]git.FileChange, error) {
		now, err := readDigestState(f)
		if err != nil {
			return nil, err
		}
		if now.covers(want) {
			return nil, nil // these entries were digested meanwhile
		}
		cur, err := f.Read(LessonsFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		merged := MergeLessons(fresh, string(cur), LessonsCap)
		for p, n := range now.Digested {
			if want.Digested[p] < n {
				want.Digested[p] = n
			}
		}
		return []git.FileChange{{Path: LessonsFile, Content: []byte(merged)}, {Path: DigestStateFile, Content: want.encode()}}, nil
	})
	if err != nil {
		return fmt.Errorf("commit the lessons: %w", err)
	}
	d.mu.Lock()
	d.unsaved = nil
	d.mu.Unlock()
	log.Info().Str("sha", sha).Int("input_bytes", len(input)).Msg("journal digested into lessons")
	return nil
}

// session runs the digest session and returns the lessons it wrote, checked.
func (d *Digester) session(ctx context.Context, input, current string) (string, claude.Result, error) {
	if d.o.Formula == nil || d.o.Claude == nil || d.o.Sandbox == nil {
		return "", claude.Result{}, fmt.Errorf("%w: no formula, runner or sandbox", ErrDigestFailed)
	}
	ws, err := d.o.Sandbox.Workspace(sandbox.Key("digest", d.o.Bot))
	if err != nil {
		return "", claude.Result{}, err
	}
	defer func() { _ = d.o.Sandbox.Remove(ws.Key()) }()
	out := ws.Out(LessonsFile)
	_ = os.Remove(out)
	prompt, err := formula.Render(d.o.Formula, formula.RenderInput{
		Role:    "digest",
		Vars:    map[string]string{"bot": d.o.Bot, "lessons_file": out, "limit": fmt.Sprint(LessonsCap)},
		Lessons: current,
		Blocks: []formula.Block{{Title: "Journal entries to digest (oldest first)",
			Body: d.o.Redactor.String(strings.ToValidUTF8(input, "")), Untrusted: true}},
		Env:    []formula.EnvVar{{Name: formula.EnvLessonsFile, Value: out}},
		Logger: d.o.Log,
	})
	if err != nil {
		return "", claude.Result{}, fmt.Errorf("%w: %w", ErrDigestFailed, err)
	}
	res, err := claude.Call(ctx, d.o.Claude, claude.Spec{Label: "digest-" + d.o.Bot, Prompt: prompt, Workspace: ws,
		Bounds: claude.Bounds{Model: d.o.Model, Backend: d.o.Backend, MaxTurns: d.o.MaxTurns, Timeout: d.o.Timeout},
		Env:    map[string]string{formula.EnvLessonsFile: out}})
	if err != nil {
		return "", res, fmt.Errorf("%w: session: %w", ErrDigestFailed, err)
	}
	// The session owns its outbox: what is there may be a link to a file
	// only the daemon may read, or a FIFO that never ends.
	data, _, err := atomicfile.ReadUntrusted(out, MaxOutbox)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", res, fmt.Errorf("%w: the session wrote no lessons file: %w", ErrDigestFailed, err)
	case err != nil:
		return "", res, fmt.Errorf("%w: lessons file refused: %w", ErrDigestFailed, err)
	}
	if err := CheckOutbox(data); err != nil {
		return "", res, err
	}
	return string(data), res, nil
}

// DigestStatus is what status shows of a digester.
type DigestStatus struct {
	Last    time.Time `json:"last,omitzero"`
	Failing string    `json:"failing,omitempty"`
	RetryAt time.Time `json:"retry_at,omitzero"`
}

// Status returns the digester's state.
func (d *Digester) Status() DigestStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := DigestStatus{Last: d.last, Failing: d.failing}
	if d.failures > 0 {
		s.RetryAt = d.next
	}
	return s
}

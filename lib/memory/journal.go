// Package memory keeps a bot's memory in its .profile repository: a
// journal entry for every run it finishes, written by the daemon from the
// run's record (what happened, at what cost), so that a later digest can
// turn the journal into lessons for the bot's prompts.
//
// Writing the journal never fails or delays the run it describes: records
// go to a durable queue under the data dir first, and a drainer commits
// what is queued to the .profile repository, retrying with backoff while
// the forge refuses.
package memory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/redact"
)

// MaxQueued bounds a journal's queue: past it the oldest entries are
// dropped (and that is logged), so a profile repository that is gone for
// months cannot fill the disk.
const MaxQueued = 2000

// Journal is one bot's journal. It is safe for concurrent use.
type Journal struct {
	bot   string
	repo  *ops.Repo
	queue string
	log   zerolog.Logger
	now   func() time.Time

	digest *Digester
	exists func(context.Context) (bool, error)

	mu        sync.Mutex
	wake      chan struct{}
	last      time.Time // when the last entry landed
	lastEntry string    // the heading of the last entry landed
	failed    string    // the last drain error, "" after a success
	noProfile bool      // the forge has no .profile repository for the bot

	lessons lessonsCache
}

// Options configures a Journal.
type Options struct {
	// Bot is the bot's login, named in entries.
	Bot string
	// Repo is the checkout of the bot's .profile repository.
	Repo *ops.Repo
	// QueueFile holds records not yet committed.
	QueueFile string
	Log       zerolog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Digester, when set, digests the journal into lessons after entries
	// landed.
	Digester *Digester
	// Exists, when set, asks the forge whether the .profile repository
	// exists, after a drain failed: a bot without one keeps no journal,
	// and says so once.
	Exists func(context.Context) (bool, error)
}

// New returns the journal of o.Bot.
func New(o Options) *Journal {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Journal{bot: o.Bot, repo: o.Repo, queue: o.QueueFile, log: o.Log, now: o.Now, wake: make(chan struct{}, 1),
		digest: o.Digester, exists: o.Exists}
}

// Add queues rec for the journal. It only writes the queue file; the
// drainer commits it.
func (j *Journal) Add(rec ledger.Record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.noProfile {
		return nil // nowhere to write it; status says so
	}
	if err := os.MkdirAll(filepath.Dir(j.queue), 0o700); err != nil {
		return fmt.Errorf("journal queue: %w", err)
	}
	f, err := os.OpenFile(j.queue, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("journal queue: %w", err)
	}
	_, err = f.Write(append(data, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("journal queue: %w", err)
	}
	select {
	case j.wake <- struct{}{}:
	default:
	}
	return nil
}

// pending reads the queue; call with mu.
func (j *Journal) pending() ([]ledger.Record, error) {
	data, err := os.ReadFile(j.queue)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("journal queue: %w", err)
	}
	var out []ledger.Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var r ledger.Record
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	if len(out) > MaxQueued {
		j.log.Warn().Int("dropped", len(out)-MaxQueued).Str("bot", j.bot).Msg("journal queue full; oldest entries dropped")
		out = out[len(out)-MaxQueued:]
	}
	return out, sc.Err()
}

// Drain commits every queued record to the journal in one commit and
// empties the queue. Records queued meanwhile stay for the next drain.
func (j *Journal) Drain(ctx context.Context) error {
	j.mu.Lock()
	recs, err := j.pending()
	j.mu.Unlock()
	if err != nil || len(recs) == 0 {
		return err
	}
	msg := fmt.Sprintf("journal: %d run(s) of %s", len(recs), j.bot)
	_, err = j.repo.Commit(ctx, msg, func(f ops.Files) ([]git.FileChange, error) {
		byFile := map[string][]byte{}
		var order []string
		for _, r := range recs {
			path := "journal/" + r.End.UTC().Format("2006-01-02") + ".md"
			if _, ok := byFile[path]; !ok {
				old, err := f.Read(path)
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, err
				}
				if len(old) == 0 {
					old = []byte("# Journal of " + j.bot + ", " + r.End.UTC().Format("2006-01-02") + "\n")
				}
				byFile[path] = old
				order = append(order, path)
			}
			byFile[path] = append(byFile[path], Entry(r)...)
		}
		out := make([]git.FileChange, 0, len(order))
		for _, p := range order {
			out = append(out, git.FileChange{Path: p, Content: byFile[p]})
		}
		return out, nil
	})
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		j.failed = err.Error()
		return err
	}
	j.failed, j.last, j.noProfile = "", j.now(), false
	j.lastEntry = entryHeading(recs[len(recs)-1])
	// Keep what was queued while committing.
	rest, rerr := j.pending()
	if rerr != nil {
		return rerr
	}
	if len(rest) > len(recs) {
		rest = rest[len(recs):]
	} else {
		rest = nil
	}
	var b bytes.Buffer
	for _, r := range rest {
		data, _ := json.Marshal(r)
		b.Write(append(data, '\n'))
	}
	return atomicfile.Write(j.queue, b.Bytes(), 0o600)
}

// entryHeading is the heading of r's entry, without its markup.
func entryHeading(r ledger.Record) string {
	head, _, _ := strings.Cut(strings.TrimPrefix(string(Entry(r)), "\n## "), "\n")
	return head
}

// Entry is the journal text of one run.
func Entry(r ledger.Record) []byte {
	var b strings.Builder
	subject := r.Project
	switch {
	case r.Issue > 0 && r.PR > 0:
		subject += fmt.Sprintf(" issue #%d, pull request #%d", r.Issue, r.PR)
	case r.Issue > 0:
		subject += fmt.Sprintf(" issue #%d", r.Issue)
	case r.PR > 0:
		subject += fmt.Sprintf(" pull request #%d", r.PR)
	}
	outcome := string(r.Reason)
	if r.Code != "" {
		outcome += " (" + string(r.Code) + ")"
	}
	fmt.Fprintf(&b, "\n## %s %s: %s, %s\n\n", r.End.UTC().Format("15:04:05Z"), r.Role, subject, outcome)
	fmt.Fprintf(&b, "- run %s, %s, $%.2f, %d turns, %d in / %d out tokens\n", r.Run, r.Wall.Round(time.Second), r.CostUSD,
		r.Turns, r.InputTokens, r.OutputTokens)
	if r.SessionID != "" {
		fmt.Fprintf(&b, "- session %s\n", r.SessionID)
	}
	if d := strings.TrimSpace(r.Detail); d != "" {
		fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(d, "\n", " "))
	}
	return []byte(b.String())
}

// Run drains the queue until ctx ends: at once when an entry is queued,
// and again with backoff (up to maxWait) while draining fails. After
// entries landed it digests the journal when that is due; a digest that
// failed is tried again at its retry time.
func (j *Journal) Run(ctx context.Context, maxWait time.Duration) {
	wait := time.Second
	for {
		err := j.Drain(ctx)
		if ctx.Err() != nil {
			return
		}
		next := time.Duration(0)
		j.mu.Lock()
		gone := j.noProfile
		j.mu.Unlock()
		switch {
		case (err != nil || gone) && j.missing(ctx):
			next = maxWait // ask again later: the repository may be created
		case err != nil:
			if wait == time.Second {
				j.log.Warn().Str("bot", j.bot).Str("error", err.Error()).Msg("journal not written yet; retrying with backoff")
			}
			next, wait = wait, min(wait*2, maxWait)
		default:
			wait = time.Second
			if j.digest != nil {
				// A failed digest logs and backs off on its own; it never
				// holds up the journal.
				_, _ = j.digest.Maybe(ctx)
				if at := j.digest.RetryAt(); !at.IsZero() {
					next = max(time.Until(at), time.Second)
				}
			}
		}
		var timer *time.Timer
		var fire <-chan time.Time
		if next > 0 {
			timer = time.NewTimer(next)
			fire = timer.C
		}
		select {
		case <-ctx.Done():
		case <-j.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// missing asks the forge whether the bot's .profile repository is gone
// and records the answer; the first time it is, that is logged once and
// the queue is dropped (there is nowhere to write it).
func (j *Journal) missing(ctx context.Context) bool {
	if j.exists == nil {
		return false
	}
	ok, err := j.exists(ctx)
	if err != nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if ok {
		if j.noProfile {
			j.log.Info().Str("bot", j.bot).Msg("the bot's .profile repository exists now: journal resumed")
		}
		j.noProfile = false
		return false
	}
	if !j.noProfile {
		j.log.Info().Str("bot", j.bot).Msg("the bot has no .profile repository: no journal and no lessons until one exists")
		_ = os.Remove(j.queue)
	}
	j.noProfile, j.failed = true, ""
	return true
}

// Status is what status shows of a journal.
type Status struct {
	Bot     string    `json:"bot"`
	Queued  int       `json:"queued"`
	Last    time.Time `json:"last,omitzero"`
	Failing string    `json:"failing,omitempty"`
	// LastEntry is the heading of the last entry that landed.
	LastEntry string `json:"last_entry,omitempty"`
	// NoProfile says the bot has no .profile repository on the forge.
	NoProfile bool `json:"no_profile,omitempty"`
	// Lessons is the size in bytes of the lessons file as last read.
	Lessons int `json:"lessons_bytes"`
	// Digest is the state of the digests, when the journal has them.
	Digest *DigestStatus `json:"digest,omitempty"`
}

// Status returns the journal's state.
func (j *Journal) Status() Status {
	j.mu.Lock()
	recs, _ := j.pending()
	st := Status{Bot: j.bot, Queued: len(recs), Last: j.last, Failing: j.failed, LastEntry: j.lastEntry, NoProfile: j.noProfile}
	j.mu.Unlock()
	st.Lessons = j.lessons.size()
	if j.digest != nil {
		ds := j.digest.Status()
		st.Digest = &ds
	}
	return st
}

// Recorder appends every record to Next and queues it, masked, for the
// journal of the role's bot; a journal that cannot queue never fails the
// append.
type Recorder struct {
	Next interface{ Append(ledger.Record) error }
	// For returns the journal of the bot acting for role on project, nil
	// when it keeps none.
	For func(project, role string) *Journal
	// Redactor masks secrets before anything is queued.
	Redactor *redact.Redactor
	Log      zerolog.Logger
}

// Append implements the runtime's Recorder.
func (r Recorder) Append(rec ledger.Record) error {
	if err := r.Next.Append(rec); err != nil {
		return err
	}
	if j := r.For(rec.Project, rec.Role); j != nil {
		if err := j.Add(rec.Redacted(r.Redactor)); err != nil {
			r.Log.Warn().Err(err).Str("bot", j.bot).Msg("journal entry not queued")
		}
	}
	return nil
}

// Profile returns the checkout of the bot's .profile repository.
func (j *Journal) Profile() *ops.Repo { return j.repo }

// Bot returns the bot's login.
func (j *Journal) Bot() string { return j.bot }

// HasProfile reports whether the bot has a .profile repository, as far
// as the journal found out.
func (j *Journal) HasProfile() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return !j.noProfile
}

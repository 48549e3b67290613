package provenance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// Forge is what a Judge reads of the repository. *forge.RepoClient
// implements it.
type Forge interface {
	// Writers are the users with write access, with their ids.
	Writers(ctx context.Context) ([]forge.User, error)
	// LabelEvents are an issue's label events, oldest first.
	LabelEvents(ctx context.Context, n int64) ([]forge.LabelEvent, error)
}

var _ Forge = (*forge.RepoClient)(nil)

// DefaultTTL is how long a Judge trusts its listing of the writers: a
// maintainer whose access is revoked stops counting within it.
const DefaultTTL = time.Minute

// Options configure a Judge.
type Options struct {
	Forge Forge
	// Bots are the factory's logins. A bot has write access, so its text
	// counts as a maintainer's unless its origin marker says otherwise,
	// but what it labels is never a maintainer's word.
	Bots []string
	// TTL bounds the age of the writers' listing; DefaultTTL when zero.
	TTL time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Judge decides the origin of work items of one repository. It is safe
// for concurrent use.
type Judge struct {
	o Options

	mu      sync.Mutex
	writers map[int64]string // id -> login
	read    time.Time
}

// New returns a Judge for o.
func New(o Options) *Judge {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Judge{o: o}
}

// writer returns the login of the writer with id, and whether there is
// one.
func (j *Judge) writer(ctx context.Context, id int64) (string, bool, error) {
	if id <= 0 {
		return "", false, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.writers == nil || j.o.Now().Sub(j.read) >= j.o.TTL {
		ws, err := j.o.Forge.Writers(ctx)
		if err != nil {
			return "", false, err
		}
		j.writers = make(map[int64]string, len(ws))
		for _, w := range ws {
			j.writers[w.ID] = w.Login
		}
		j.read = j.o.Now()
	}
	login, ok := j.writers[id]
	return login, ok, nil
}

// isBot reports whether login is one of the factory's.
func (j *Judge) isBot(login string) bool {
	for _, b := range j.o.Bots {
		if b != "" && strings.EqualFold(b, login) {
			return true
		}
	}
	return false
}

// IsMaintainer reports whether u is a maintainer: a user with write
// access to the repository, matched by id, who is not one of the bots.
func (j *Judge) IsMaintainer(ctx context.Context, u forge.User) (bool, error) {
	login, ok, err := j.writer(ctx, u.ID)
	if err != nil || !ok {
		return false, err
	}
	return !j.isBot(login) && !j.isBot(u.Login), nil
}

// Issue returns the origin of issue i's text (see the package doc).
func (j *Judge) Issue(ctx context.Context, i forge.Issue) (Origin, error) {
	return j.of(ctx, i.AuthorID, i.Body)
}

// Comment returns the origin of comment c's text: its author's, lowered
// by the markers of its body.
func (j *Judge) Comment(ctx context.Context, c forge.Comment) (Origin, error) {
	return j.of(ctx, c.AuthorID, c.Body)
}

// Pull returns the origin of pull request p: an outsider's when it comes
// from a fork, else its author's lowered by the markers of its body.
func (j *Judge) Pull(ctx context.Context, p forge.PullRequest) (Origin, error) {
	if p.FromFork {
		return Outsider, nil
	}
	return j.of(ctx, p.AuthorID, p.Body)
}

func (j *Judge) of(ctx context.Context, author int64, body string) (Origin, error) {
	o := Outsider
	_, ok, err := j.writer(ctx, author)
	if err != nil {
		return "", err
	}
	if ok {
		o = Maintainer
	}
	if m, found := FromMarkers(body); found {
		o = Least(o, m)
	}
	return o, nil
}

// Applied is who applied a label to an item last.
type Applied struct {
	// By is who applied it; zero when nobody ever did (or the label was
	// deleted since).
	By forge.User
	// Maintainer says By is a maintainer: the label is a maintainer's
	// word.
	Maintainer bool
	// At is when it was applied.
	At time.Time
}

// LastApplied returns who last applied label to issue n, and whether
// that was a maintainer. Only the latest application counts: a
// maintainer's backlog, removed and applied again by a bot, is the bot's.
func (j *Judge) LastApplied(ctx context.Context, n int64, label forge.LabelName) (Applied, error) {
	evs, err := j.o.Forge.LabelEvents(ctx, n)
	if err != nil {
		return Applied{}, err
	}
	for k := len(evs) - 1; k >= 0; k-- {
		e := evs[k]
		if e.Label != label || !e.Added {
			continue
		}
		ok, err := j.IsMaintainer(ctx, e.By)
		if err != nil {
			return Applied{}, err
		}
		return Applied{By: e.By, Maintainer: ok, At: e.Created}, nil
	}
	return Applied{}, nil
}

// Shown is the origin of all a session was shown: the least trusted of
// the issues and comments judged, and the issues whose text or comment
// lowered it. What the session writes carries it.
type Shown struct {
	Origin    Origin
	Outsiders []int64
}

// ShownOf judges issues and the comments shown of each issue (by its
// number).
func (j *Judge) ShownOf(ctx context.Context, issues []forge.Issue, comments map[int64][]forge.Comment) (Shown, error) {
	s := Shown{Origin: Maintainer}
	out := map[int64]bool{}
	lower := func(n int64, o Origin) {
		if o != Maintainer {
			out[n] = true
		}
		s.Origin = Least(s.Origin, o)
	}
	for _, i := range issues {
		o, err := j.Issue(ctx, i)
		if err != nil {
			return Shown{}, fmt.Errorf("origin of #%d: %w", i.Number, err)
		}
		lower(i.Number, o)
	}
	for n, cs := range comments {
		for _, c := range cs {
			o, err := j.Comment(ctx, c)
			if err != nil {
				return Shown{}, fmt.Errorf("origin of a comment on #%d: %w", n, err)
			}
			lower(n, o)
		}
	}
	s.Outsiders = slices.Sorted(maps.Keys(out))
	return s, nil
}

// Marker is the origin marker of what the session wrote, naming the
// outsiders' issues; empty before anything was judged.
func (s Shown) Marker() string {
	if s.Origin == "" {
		return ""
	}
	from := make([]string, len(s.Outsiders))
	for i, n := range s.Outsiders {
		from[i] = fmt.Sprintf("issue-%d", n)
	}
	return Marker(s.Origin, from...)
}

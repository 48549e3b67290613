package formula

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

// TreeAt returns an overriding repository's files as its checkout last
// fetched them, and the head they are at; a nil tree (and "") when there is
// no checkout (yet).
type TreeAt func(ctx context.Context) (tree *Tree, head string, err error)

// LiveOptions configures a Live formula.
type LiveOptions struct {
	// Name is the formula's name.
	Name string
	// Embedded holds the shipped formulas.
	Embedded fs.FS
	// Profile and Ops are the overriding repositories; either may be nil.
	Profile, Ops TreeAt
	// Check, when set, is what the agent requires of its formula beyond
	// lint (the follow-ups it renders, say): a formula it refuses is
	// refused like one that fails lint.
	Check  func(*Formula) error
	Logger zerolog.Logger
}

// Live is a formula that follows its overrides without a restart: Refresh
// resolves it again (.profile, then ops, then embedded) when a checkout's
// head moved. An override that fails lint or Check is refused, logged
// with its file:line and shown by Status, and the formula in force stays
// (the next layer's on the first resolution). It is safe for concurrent
// use.
type Live struct {
	o LiveOptions

	mu      sync.Mutex
	key     string // the heads the formula was resolved at
	cur     *Formula
	src     Source
	refused string
}

// NewLive resolves the formula once; it fails only when not even the
// embedded formula is usable.
func NewLive(ctx context.Context, o LiveOptions) (*Live, error) {
	l := &Live{o: o}
	l.Refresh(ctx)
	if l.cur == nil {
		return nil, fmt.Errorf("formula %s: %s", o.Name, l.refused)
	}
	return l, nil
}

// Formula returns the formula in force.
func (l *Live) Formula() *Formula {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur
}

// LiveStatus is what status shows of a live formula.
type LiveStatus struct {
	Name string `json:"name"`
	// Source is where the formula in force came from ("kind:path").
	Source string `json:"source"`
	// Refused is why the newest override is not in force, "" when it is.
	Refused string `json:"refused,omitempty"`
}

// Status returns the formula's state.
func (l *Live) Status() LiveStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return LiveStatus{Name: l.o.Name, Source: l.src.String(), Refused: l.refused}
}

// Refresh resolves the formula again when a checkout moved since the last
// resolution.
func (l *Live) Refresh(ctx context.Context) {
	prof, profHead, perr := tree(ctx, l.o.Profile)
	ops, opsHead, oerr := tree(ctx, l.o.Ops)
	if err := errors.Join(perr, oerr); err != nil {
		l.o.Logger.Debug().Err(err).Str("formula", l.o.Name).Msg("formula overrides not read; the formula in force stays")
		return
	}
	key := profHead + " " + opsHead
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil && key == l.key {
		return
	}
	var layers []Resolver
	if prof != nil {
		layers = append(layers, Resolver{Profile: prof, Ops: ops})
	}
	if ops != nil {
		layers = append(layers, Resolver{Ops: ops})
	}
	layers = append(layers, Resolver{})
	var refused []string
	prev := l.refused
	for _, r := range layers {
		// The .profile moves with every journal entry: say only what changed.
		r.Embedded, r.Logger = l.o.Embedded, zerolog.Nop()
		f, src, err := r.Resolve(l.o.Name)
		if err == nil && l.o.Check != nil {
			if err = l.o.Check(f); err != nil {
				err = fmt.Errorf("%s override for %s refused: %w", src.Kind, l.o.Name, err)
			}
		} else if err != nil && Problems(err) == nil && !errors.Is(err, ErrNotFound) {
			// Not the override's fault (git failed): try again next time.
			l.o.Logger.Debug().Err(err).Str("formula", l.o.Name).Msg("formula overrides not read; the formula in force stays")
			l.key = ""
			if l.cur != nil {
				return
			}
		}
		if err != nil {
			refused = append(refused, err.Error())
			continue
		}
		l.key = key
		l.refused = strings.Join(refused, "; ")
		if len(refused) > 0 {
			if l.refused != prev {
				l.o.Logger.Warn().Str("formula", l.o.Name).Str("refused", l.refused).Msg("formula override refused; the formula in force stays")
			}
			if l.cur != nil {
				return
			}
		}
		if l.cur == nil || src != l.src || f.Text() != l.cur.Text() {
			l.o.Logger.Info().Str("formula", f.Name).Int("version", f.Version).Str("source", string(src.Kind)).
				Str("path", src.Path).Msg("formula resolved")
		}
		l.cur, l.src = f, src
		return
	}
	l.refused = strings.Join(refused, "; ")
}

func tree(ctx context.Context, at TreeAt) (*Tree, string, error) {
	if at == nil {
		return nil, "", nil
	}
	return at(ctx)
}

// InForce returns the formula live says is in force (a .profile or ops
// override that landed), else def: live may be nil, or have nothing yet.
func InForce(live func() *Formula, def *Formula) *Formula {
	if live != nil {
		if f := live(); f != nil {
			return f
		}
	}
	return def
}

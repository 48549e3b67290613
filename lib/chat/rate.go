package chat

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
)

// usage is one user's counters.
type usage struct {
	// Recent are the times (Unix seconds) of the messages of the last hour.
	Recent []int64 `json:"recent"`
	// Day is the date (YYYY-MM-DD, in the clock's zone) Requests and
	// Tokens count for.
	Day      string `json:"day"`
	Requests int    `json:"requests"`
	Tokens   int64  `json:"tokens"`
}

// rateStore keeps the counters of every user in one file, written
// atomically after every change, so a restart resets no cap.
type rateStore struct {
	mu     sync.Mutex
	path   string
	limits Limits
	Users  map[string]*usage `json:"users"`
}

// openRates reads the counters at path (none yet is fine).
func openRates(path string, l Limits) (*rateStore, error) {
	rs := &rateStore{path: path, limits: l, Users: map[string]*usage{}}
	err := atomicfile.ReadJSON(path, rs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("rate counters %s: %w (delete the file to reset them)", path, err)
	}
	if rs.Users == nil {
		rs.Users = map[string]*usage{}
	}
	return rs, nil
}

// limited is a refusal: which cap, and when to try again.
type limited struct {
	What       string
	RetryAfter time.Duration
}

// take checks user's caps at now and, when none is reached, counts one
// message and saves the counters. A non-nil limited means refused.
func (rs *rateStore) take(user string, now time.Time) (*limited, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	u := rs.of(user, now)
	if len(u.Recent) >= rs.limits.PerHour {
		wait := time.Unix(u.Recent[0], 0).Add(time.Hour).Sub(now) + time.Second
		return &limited{What: fmt.Sprintf("%d messages an hour", rs.limits.PerHour), RetryAfter: wait}, nil
	}
	if u.Requests >= rs.limits.PerDay {
		return &limited{What: fmt.Sprintf("%d messages a day", rs.limits.PerDay), RetryAfter: untilMidnight(now)}, nil
	}
	if u.Tokens >= rs.limits.TokensPerDay {
		return &limited{What: fmt.Sprintf("%d model tokens a day", rs.limits.TokensPerDay), RetryAfter: untilMidnight(now)}, nil
	}
	u.Recent = append(u.Recent, now.Unix())
	u.Requests++
	return nil, rs.save()
}

// addTokens counts the tokens of an answer to user.
func (rs *rateStore) addTokens(user string, n int64, now time.Time) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.of(user, now).Tokens += n
	return rs.save()
}

// of returns user's counters at now: the hour window moved on, the day's
// counters reset at midnight. Call with rs.mu.
func (rs *rateStore) of(user string, now time.Time) *usage {
	key := strings.ToLower(user)
	u := rs.Users[key]
	if u == nil {
		u = &usage{}
		rs.Users[key] = u
	}
	cut := now.Add(-time.Hour).Unix()
	i := 0
	for i < len(u.Recent) && u.Recent[i] <= cut {
		i++
	}
	u.Recent = u.Recent[i:]
	if day := now.Format(time.DateOnly); u.Day != day {
		u.Day, u.Requests, u.Tokens = day, 0, 0
	}
	return u
}

func (rs *rateStore) save() error {
	if err := atomicfile.WriteJSON(rs.path, rs, 0o600); err != nil {
		return fmt.Errorf("rate counters: %w", err)
	}
	return nil
}

// untilMidnight is the time from now to the next midnight of its zone.
func untilMidnight(now time.Time) time.Duration {
	y, m, d := now.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, now.Location()).Sub(now)
}

// Package forgefake is an in-memory forge with the operations of
// forge.RepoClient, for fast unit tests of agent logic. A conformance suite
// (lib/forge/conformance_test.go) runs the same cases against it and a real
// Gitea server, so its behaviour follows the real one.
package forgefake

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// Forge holds all state. It is safe for concurrent use.
type Forge struct {
	mu    sync.Mutex
	now   func() time.Time
	repos map[string]*repo
	users map[string]bool  // every login that has acted or owns a repository
	ids   map[string]int64 // user ids by lower-case login, given on first use
	calls map[string]int
	fail  map[string][]error
	seq   int64
}

type repo struct {
	slug       string
	labels     []forge.Label
	issues     map[int64]*issue
	next       int64 // next issue/PR number
	comments   map[int64]*comment
	branches   map[string]string // name -> sha
	files      map[string]map[string]file
	statuses   map[string][]forge.CommitStatus
	protection map[string]forge.Protection
	collab     map[string]forge.Permission // login -> explicit permission
	parent     string                      // slug of the repository it was forked from
}

type issue struct {
	forge.Issue
	pull *forge.PullRequest
	// head is the repository holding the pull request's head branch: the
	// base repository, or a fork of it.
	head    *repo
	diff    string // set by SetPullDiff; "" serves a placeholder
	reviews []forge.Review
	// events are the label events of its timeline, oldest first.
	events []forge.LabelEvent
}

type comment struct {
	forge.Comment
	issue int64
}

type file struct {
	sha     string
	content []byte
}

// New returns an empty forge whose clock is now (time.Now when nil).
func New(now func() time.Time) *Forge {
	if now == nil {
		now = time.Now
	}
	return &Forge{now: now, repos: map[string]*repo{}, users: map[string]bool{}, ids: map[string]int64{}, calls: map[string]int{}, fail: map[string][]error{}}
}

// Repo returns a handle on owner/name acting as login, creating the
// repository (with branch main) on first use.
func (f *Forge) Repo(owner, name, login string) *Repo {
	f.mu.Lock()
	defer f.mu.Unlock()
	slug := owner + "/" + name
	if _, ok := f.repos[slug]; !ok {
		f.repos[slug] = f.newRepo(slug, map[string]string{"main": f.newSHA()}, map[string]map[string]file{})
	}
	f.users[owner], f.users[login] = true, true
	return &Repo{f: f, slug: slug, owner: owner, name: name, login: login}
}

func (f *Forge) newRepo(slug string, branches map[string]string, files map[string]map[string]file) *repo {
	return &repo{
		slug: slug, issues: map[int64]*issue{}, next: 1, comments: map[int64]*comment{},
		branches: branches, files: files, statuses: map[string][]forge.CommitStatus{},
		protection: map[string]forge.Protection{}, collab: map[string]forge.Permission{},
	}
}

// FailNext makes the next call of op (a method name such as "ListIssues")
// return err instead of acting.
func (f *Forge) FailNext(op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[op] = append(f.fail[op], err)
}

// Calls returns how many times each operation was called.
func (f *Forge) Calls() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.calls))
	for k, v := range f.calls {
		out[k] = v
	}
	return out
}

// enter locks the forge for op and counts it. It returns op's injected
// failure, if any, with the forge unlocked again; on nil the caller holds
// the lock and must release it (defer f.mu.Unlock()).
func (f *Forge) enter(op string) error {
	f.mu.Lock()
	f.calls[op]++
	if errs := f.fail[op]; len(errs) > 0 {
		f.fail[op] = errs[1:]
		f.mu.Unlock()
		return errs[0]
	}
	return nil
}

func (f *Forge) newSHA() string {
	f.seq++
	h := sha1.Sum([]byte(fmt.Sprint("fake-commit-", f.seq)))
	return hex.EncodeToString(h[:])
}

func (f *Forge) newID() int64 {
	f.seq++
	return f.seq
}

// user returns login with its id, giving it one on first use. The caller
// holds f.mu.
func (f *Forge) user(login string) forge.User {
	key := strings.ToLower(login)
	id, ok := f.ids[key]
	if !ok {
		id = f.newID()
		f.ids[key] = id
	}
	return forge.User{ID: id, Login: login}
}

func notFound(what string, args ...any) error {
	return fmt.Errorf(what+": %w", append(args, forge.ErrNotFound)...)
}

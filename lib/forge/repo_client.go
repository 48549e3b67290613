package forge

import (
	"context"
	"fmt"
	"sync"
)

// RepoClient is a Client scoped to one repository; agents hold one per
// project. It is safe for concurrent use.
type RepoClient struct {
	c     *Client
	owner string
	name  string
	slug  string
}

// Repo returns a handle scoped to owner/name.
func (c *Client) Repo(owner, name string) *RepoClient {
	return &RepoClient{c: c, owner: owner, name: name, slug: owner + "/" + name}
}

// Client returns the underlying client.
func (r *RepoClient) Client() *Client { return r.c }

// Owner returns the repository owner.
func (r *RepoClient) Owner() string { return r.owner }

// Name returns the repository name.
func (r *RepoClient) Name() string { return r.name }

// Slug returns "owner/name".
func (r *RepoClient) Slug() string { return r.slug }

// Me returns the authenticated user (cached).
func (r *RepoClient) Me(ctx context.Context) (User, error) { return r.c.Me(ctx) }

// path joins the repository API prefix and a suffix.
func (r *RepoClient) path(format string, args ...any) string {
	return "/repos/" + r.slug + fmt.Sprintf(format, args...)
}

// labelCache maps label names to ids per repository.
type labelCache struct {
	mu   sync.Mutex
	repo map[string]map[LabelName]int64
}

func (lc *labelCache) get(slug string, name LabelName) (int64, bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	id, ok := lc.repo[slug][name]
	return id, ok
}

func (lc *labelCache) put(slug string, ls []Label) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.putLocked(slug, ls)
}

// replace makes ls, a full listing, the only labels known for slug, so a
// label deleted on the forge stops resolving to its old id.
func (lc *labelCache) replace(slug string, ls []Label) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	delete(lc.repo, slug)
	lc.putLocked(slug, ls)
}

func (lc *labelCache) putLocked(slug string, ls []Label) {
	if lc.repo == nil {
		lc.repo = map[string]map[LabelName]int64{}
	}
	m := lc.repo[slug]
	if m == nil {
		m = map[LabelName]int64{}
		lc.repo[slug] = m
	}
	for _, l := range ls {
		m[l.Name] = l.ID
	}
}

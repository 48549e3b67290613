package forge

import (
	"context"
	"fmt"
	"net/url"
)

// Tag is a git tag of a repository and the commit it points at.
type Tag struct {
	Name string
	// SHA is the commit the tag points at (the target of an annotated
	// tag, not the tag object).
	SHA string
}

// GetTag returns the tag name; ErrNotFound when the repository has none.
func (r *RepoClient) GetTag(ctx context.Context, name string) (Tag, error) {
	var t struct {
		Name   string `json:"name"`
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	if err := r.c.do(ctx, "GET", r.path("/tags/%s", url.PathEscape(name)), nil, nil, &t); err != nil {
		return Tag{}, fmt.Errorf("get tag %s in %s: %w", name, r.slug, err)
	}
	return Tag{Name: t.Name, SHA: t.Commit.SHA}, nil
}

// CreateTag creates the tag name on the commit sha with message (an
// annotated tag) and returns it. A tag of that name already there
// (whatever its commit) wraps ErrConflict or ErrInvalid, as the forge
// answers 409 or 422: read it back with GetTag.
func (r *RepoClient) CreateTag(ctx context.Context, name, sha, message string) (Tag, error) {
	in := map[string]string{"tag_name": name, "target": sha, "message": message}
	var t struct {
		Name   string `json:"name"`
		Commit struct {
			SHA string `json:"sha"`
		} `json:"commit"`
	}
	if err := r.c.do(ctx, "POST", r.path("/tags"), nil, in, &t); err != nil {
		return Tag{}, fmt.Errorf("create tag %s on %s in %s: %w", name, sha, r.slug, err)
	}
	return Tag{Name: t.Name, SHA: t.Commit.SHA}, nil
}

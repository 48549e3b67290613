package forgefake

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// Fork forks the repository into the acting user's account, with the
// base's branches and files, and returns the fork.
func (r *Repo) Fork(ctx context.Context) (forge.Repo, error) {
	if err := r.f.enter("Fork"); err != nil {
		return forge.Repo{}, err
	}
	defer r.f.mu.Unlock()
	slug := r.login + "/" + r.name
	if _, ok := r.f.repos[slug]; ok {
		return forge.Repo{}, fmt.Errorf("fork %s: %s exists: %w", r.slug, slug, forge.ErrConflict)
	}
	s := r.st()
	branches := make(map[string]string, len(s.branches))
	for b, sha := range s.branches {
		branches[b] = sha
	}
	files := make(map[string]map[string]file, len(s.files))
	for b, fs := range s.files {
		files[b] = cloneFiles(fs)
	}
	fork := r.f.newRepo(slug, branches, files)
	fork.parent = r.slug
	r.f.repos[slug] = fork
	return forge.Repo{Owner: r.login, Name: r.name, FullName: slug, DefaultBranch: "main", CloneURL: "fake://" + slug + ".git"}, nil
}

// forkOf returns user's fork of the repository slug, or nil.
func (f *Forge) forkOf(slug, user string) *repo {
	for s, rp := range f.repos {
		if owner, _, _ := strings.Cut(s, "/"); rp.parent == slug && strings.EqualFold(owner, user) {
			return rp
		}
	}
	return nil
}

// AddCollaborator grants login perm; only the owner or an admin may.
func (r *Repo) AddCollaborator(ctx context.Context, login string, perm forge.Permission) error {
	if err := r.f.enter("AddCollaborator"); err != nil {
		return err
	}
	defer r.f.mu.Unlock()
	if p := r.permOf(r.login); p != forge.PermOwner && p != forge.PermAdmin {
		return fmt.Errorf("add collaborator %s to %s: %w", login, r.slug, forge.ErrForbidden)
	}
	r.f.users[login] = true
	r.st().collab[strings.ToLower(login)] = perm
	return nil
}

// CollaboratorPermission returns login's permission: owner for the
// repository owner, the granted one for collaborators, read for any other
// known user (fake repositories are public). As on the forge, only the
// owner, an admin or login itself may ask; an unknown login is not found.
func (r *Repo) CollaboratorPermission(ctx context.Context, login string) (forge.Permission, error) {
	if err := r.f.enter("CollaboratorPermission"); err != nil {
		return "", err
	}
	defer r.f.mu.Unlock()
	if p := r.permOf(r.login); p != forge.PermOwner && p != forge.PermAdmin && !strings.EqualFold(r.login, login) {
		return "", fmt.Errorf("get permission of %s on %s: %w", login, r.slug, forge.ErrForbidden)
	}
	if !r.knows(login) {
		return "", notFound("user %s", login)
	}
	return r.permOf(login), nil
}

func (r *Repo) knows(login string) bool {
	for u := range r.f.users {
		if strings.EqualFold(u, login) {
			return true
		}
	}
	return false
}

func (r *Repo) permOf(login string) forge.Permission {
	if strings.EqualFold(login, r.owner) {
		return forge.PermOwner
	}
	if p, ok := r.st().collab[strings.ToLower(login)]; ok {
		return p
	}
	return forge.PermRead
}

// Writers returns the owner and the collaborators with write access or
// more, with their ids.
func (r *Repo) Writers(ctx context.Context) ([]forge.User, error) {
	if err := r.f.enter("Writers"); err != nil {
		return nil, err
	}
	defer r.f.mu.Unlock()
	out := []forge.User{r.f.user(r.owner)}
	logins := make([]string, 0, len(r.st().collab))
	for login, p := range r.st().collab {
		if p.CanWrite() && !strings.EqualFold(login, r.owner) {
			logins = append(logins, login)
		}
	}
	sort.Strings(logins)
	for _, l := range logins {
		out = append(out, r.f.user(l))
	}
	return out, nil
}

// LabelEvents returns the label events of issue or pull request n, oldest
// first.
func (r *Repo) LabelEvents(ctx context.Context, n int64) ([]forge.LabelEvent, error) {
	if err := r.f.enter("LabelEvents"); err != nil {
		return nil, err
	}
	defer r.f.mu.Unlock()
	i, err := r.issue(n)
	if err != nil {
		return nil, err
	}
	return slices.Clone(i.events), nil
}

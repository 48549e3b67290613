package forge

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"

	"code.gitea.io/sdk/gitea"
)

// Get returns the repository.
func (r *RepoClient) Get(ctx context.Context) (Repo, error) {
	rp, resp, err := r.c.api(ctx).GetRepo(r.owner, r.name)
	if err := r.c.check("get repo "+r.slug, resp, err); err != nil {
		return Repo{}, err
	}
	return toRepo(rp), nil
}

// Fork forks the repository into the acting user's account and returns
// the fork. Pull requests from it name their head "<fork owner>:<branch>".
func (r *RepoClient) Fork(ctx context.Context) (Repo, error) {
	rp, resp, err := r.c.api(ctx).CreateFork(r.owner, r.name, gitea.CreateForkOption{})
	if err := r.c.check("fork "+r.slug, resp, err); err != nil {
		return Repo{}, err
	}
	return toRepo(rp), nil
}

// GetBranch returns branch name and its head SHA.
func (r *RepoClient) GetBranch(ctx context.Context, name string) (Branch, error) {
	b, resp, err := r.c.api(ctx).GetRepoBranch(r.owner, r.name, name)
	if err := r.c.check(fmt.Sprintf("get branch %s in %s", name, r.slug), resp, err); err != nil {
		return Branch{}, err
	}
	out := Branch{Name: b.Name}
	if b.Commit != nil {
		out.SHA = b.Commit.ID
	}
	return out, nil
}

// CreateBranch creates branch name from ref (a branch, tag or commit SHA).
func (r *RepoClient) CreateBranch(ctx context.Context, name, ref string) (Branch, error) {
	var b struct {
		Name   string `json:"name"`
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	in := map[string]string{"new_branch_name": name, "old_ref_name": ref}
	if err := r.c.do(ctx, "POST", r.path("/branches"), nil, in, &b); err != nil {
		return Branch{}, fmt.Errorf("create branch %s from %s in %s: %w", name, ref, r.slug, err)
	}
	return Branch{Name: b.Name, SHA: b.Commit.ID}, nil
}

// DeleteBranch deletes branch name; a missing branch is not an error.
func (r *RepoClient) DeleteBranch(ctx context.Context, name string) error {
	_, resp, err := r.c.api(ctx).DeleteRepoBranch(r.owner, r.name, name)
	if err := r.c.check(fmt.Sprintf("delete branch %s in %s", name, r.slug), resp, err); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// GetFile returns the file at path on ref (default branch when empty).
func (r *RepoClient) GetFile(ctx context.Context, path, ref string) (File, error) {
	q := url.Values{}
	if ref != "" {
		q.Set("ref", ref)
	}
	var c struct {
		Path     string `json:"path"`
		SHA      string `json:"sha"`
		Type     string `json:"type"`
		Encoding string `json:"encoding"`
		Content  string `json:"content"`
	}
	if err := r.c.do(ctx, "GET", r.path("/contents/%s", escapePath(path)), q, nil, &c); err != nil {
		return File{}, fmt.Errorf("get file %s in %s: %w", path, r.slug, err)
	}
	if c.Type != "file" {
		return File{}, fmt.Errorf("get file %s in %s: is a %s", path, r.slug, c.Type)
	}
	data, err := base64.StdEncoding.DecodeString(c.Content)
	if err != nil {
		return File{}, fmt.Errorf("decode file %s in %s: %w", path, r.slug, err)
	}
	return File{Path: c.Path, SHA: c.SHA, Content: data}, nil
}

// FileChange writes one file in one commit.
type FileChange struct {
	Path    string
	Content []byte
	// SHA is the blob being replaced; empty creates the file.
	SHA     string
	Branch  string
	Message string
}

// PutFile creates or updates a file and returns its new blob SHA. A stale
// SHA fails with ErrConflict or ErrInvalid.
func (r *RepoClient) PutFile(ctx context.Context, f FileChange) (string, error) {
	fo := gitea.FileOptions{Message: f.Message, BranchName: f.Branch}
	content := base64.StdEncoding.EncodeToString(f.Content)
	var (
		fr   *gitea.FileResponse
		resp *gitea.Response
		err  error
	)
	if f.SHA == "" {
		fr, resp, err = r.c.api(ctx).CreateFile(r.owner, r.name, f.Path, gitea.CreateFileOptions{FileOptions: fo, Content: content})
	} else {
		fr, resp, err = r.c.api(ctx).UpdateFile(r.owner, r.name, f.Path, gitea.UpdateFileOptions{FileOptions: fo, SHA: f.SHA, Content: content})
	}
	if err := r.c.check(fmt.Sprintf("put file %s in %s", f.Path, r.slug), resp, err); err != nil {
		return "", err
	}
	if fr == nil || fr.Content == nil {
		return "", nil
	}
	return fr.Content.SHA, nil
}

func escapePath(p string) string {
	return (&url.URL{Path: p}).EscapedPath()
}

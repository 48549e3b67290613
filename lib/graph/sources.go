package graph

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// opsFiles reads an ops checkout.
type opsFiles struct{ f ops.Files }

// OpsFiles reads the files of an ops checkout.
func OpsFiles(f ops.Files) Files { return opsFiles{f} }

// Read implements Files.
func (o opsFiles) Read(p string) ([]byte, error) { return o.f.Read(p) }

// List implements Files.
func (o opsFiles) List(dir string) ([]string, error) { return treePaths(o.f.List(dir)) }

// gitFiles reads a clone at one revision.
type gitFiles struct {
	ctx context.Context
	r   *git.Repo
	rev string
}

// GitFiles reads the files of the clone r at rev, without fetching: a
// checkout another process keeps is read as it last fetched it.
func GitFiles(ctx context.Context, r *git.Repo, rev string) Files { return gitFiles{ctx, r, rev} }

// Read implements Files.
func (g gitFiles) Read(p string) ([]byte, error) { return g.r.ShowFile(g.ctx, g.rev, p) }

// List implements Files.
func (g gitFiles) List(dir string) ([]string, error) {
	return treePaths(g.r.ListFiles(g.ctx, g.rev, dir))
}

// treePaths returns the paths of a listing.
func treePaths(tf []git.TreeFile, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(tf))
	for _, t := range tf {
		out = append(out, t.Path)
	}
	return out, nil
}

// repoFiles reads a repository through the forge's API.
type repoFiles struct {
	ctx  context.Context
	r    *forge.RepoClient
	ref  string
	once sync.Once
	tree []string
	err  error
}

// RepoFiles reads the files of the forge repository r at ref (its default
// branch when empty) through the API; the tree is listed once, on the
// first List.
func RepoFiles(ctx context.Context, r *forge.RepoClient, ref string) Files {
	return &repoFiles{ctx: ctx, r: r, ref: ref}
}

// Read implements Files.
func (f *repoFiles) Read(p string) ([]byte, error) {
	file, err := f.r.GetFile(f.ctx, p, f.ref)
	if errors.Is(err, forge.ErrNotFound) {
		return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	return file.Content, nil
}

// List implements Files.
func (f *repoFiles) List(dir string) ([]string, error) {
	f.once.Do(func() {
		ref := f.ref
		if ref == "" {
			repo, err := f.r.Get(f.ctx)
			if err != nil {
				f.err = err
				return
			}
			ref = repo.DefaultBranch
		}
		f.tree, f.err = f.r.ListTree(f.ctx, ref)
		if errors.Is(f.err, forge.ErrNotFound) {
			f.tree, f.err = nil, nil // an empty repository
		}
	})
	if f.err != nil {
		return nil, f.err
	}
	dir = strings.TrimSuffix(dir, "/")
	var out []string
	for _, p := range f.tree {
		if path.Dir(p) == dir {
			out = append(out, p)
		}
	}
	return out, nil
}

// dirFiles reads a directory as it is.
type dirFiles string

// DirFiles reads the files under the directory root, as they are on disk.
func DirFiles(root string) Files { return dirFiles(root) }

// Read implements Files.
func (d dirFiles) Read(p string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), filepath.FromSlash(p)))
}

// List implements Files.
func (d dirFiles) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(string(d), filepath.FromSlash(dir)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			out = append(out, path.Join(strings.TrimSuffix(dir, "/"), e.Name()))
		}
	}
	return out, nil
}

package git

import (
	"context"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
)

// A FileChange is one file a commit writes (Content) or deletes (Delete),
// by its slash-separated path in the repository.
type FileChange struct {
	Path    string
	Content []byte
	Delete  bool
}

// CommitFiles makes a commit on top of parent (a ref or SHA of the clone;
// "" for the first commit of an empty repository) that applies changes
// to parent's tree, without touching any working tree or the clone's own
// index, and returns its SHA. A change set that changes nothing returns
// parent's commit itself.
func (r *Repo) CommitFiles(ctx context.Context, parent, message string, changes []FileChange) (string, error) {
	base := ""
	if parent != "" {
		var err error
		if base, err = r.revParse(ctx, r.dir, parent); err != nil {
			return "", fmt.Errorf("commit files: %w", err)
		}
	}
	idx, err := os.CreateTemp("", "disinto-index-*")
	if err != nil {
		return "", fmt.Errorf("commit files: %w", err)
	}
	idx.Close()
	defer os.Remove(idx.Name())
	env := []string{"GIT_INDEX_FILE=" + idx.Name()}
	run := func(args ...string) (string, error) {
		out, err := r.g.exec(ctx, call{dir: r.dir, args: args, env: env})
		return strings.TrimSpace(out), err
	}
	readTree := []string{"read-tree", "--empty"}
	if base != "" {
		readTree = []string{"read-tree", base}
	}
	if _, err := run(readTree...); err != nil {
		return "", fmt.Errorf("commit files: %w", err)
	}
	for _, c := range changes {
		p := path.Clean(strings.TrimPrefix(c.Path, "/"))
		if p == "." || strings.HasPrefix(p, "../") || p == ".." {
			return "", fmt.Errorf("commit files: bad path %q", c.Path)
		}
		if c.Delete {
			if _, err := run("update-index", "--force-remove", "--", p); err != nil {
				return "", fmt.Errorf("commit files: remove %s: %w", p, err)
			}
			continue
		}
		blob, err := r.hashObject(ctx, c.Content)
		if err != nil {
			return "", fmt.Errorf("commit files: %s: %w", p, err)
		}
		if _, err := run("update-index", "--add", "--cacheinfo", "100644,"+blob+","+p); err != nil {
			return "", fmt.Errorf("commit files: add %s: %w", p, err)
		}
	}
	tree, err := run("write-tree")
	if err != nil {
		return "", fmt.Errorf("commit files: %w", err)
	}
	commit := []string{"commit-tree", tree, "-m", message}
	if base != "" {
		baseTree, err := run("rev-parse", base+"^{tree}")
		if err != nil {
			return "", fmt.Errorf("commit files: %w", err)
		}
		if tree == baseTree {
			return base, nil
		}
		commit = append(commit, "-p", base)
	}
	sha, err := run(commit...)
	if err != nil {
		return "", fmt.Errorf("commit files: %w", err)
	}
	return sha, nil
}

// hashObject stores data as a blob and returns its id.
func (r *Repo) hashObject(ctx context.Context, data []byte) (string, error) {
	f, err := os.CreateTemp("", "disinto-blob-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	out, err := r.g.run(ctx, r.dir, "hash-object", "-w", "--no-filters", "--", f.Name())
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// UpdateRef points ref of the clone at sha.
func (r *Repo) UpdateRef(ctx context.Context, ref, sha string) error {
	defer r.g.lock(r.dir)()
	if _, err := r.g.run(ctx, r.dir, "update-ref", ref, sha); err != nil {
		return fmt.Errorf("update %s: %w", ref, err)
	}
	return nil
}

// PathExists reports whether rev has a file or directory at path.
func (r *Repo) PathExists(ctx context.Context, rev, path string) (bool, error) {
	_, err := r.g.run(ctx, r.dir, "cat-file", "-e", rev+":"+path)
	switch {
	case err == nil:
		return true, nil
	case exitCode(err) == 128 || exitCode(err) == 1:
		return false, nil
	}
	return false, fmt.Errorf("look up %s at %s: %w", path, rev, err)
}

// TreeFile is a file of a tree listing.
type TreeFile struct {
	// Path is relative to the repository's root.
	Path string
	// Size is the blob's size in bytes.
	Size int64
}

// ListFiles returns the files directly in dir at rev (not in its
// subdirectories), in path order; none when rev has no such directory.
func (r *Repo) ListFiles(ctx context.Context, rev, dir string) ([]TreeFile, error) {
	out, err := r.g.run(ctx, r.dir, "ls-tree", "-l", "-z", rev, "--", strings.TrimSuffix(dir, "/")+"/")
	if err != nil {
		return nil, fmt.Errorf("list %s at %s: %w", dir, rev, err)
	}
	var files []TreeFile
	for _, rec := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 || f[1] != "blob" {
			continue
		}
		size, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			continue
		}
		files = append(files, TreeFile{Path: path, Size: size})
	}
	return files, nil
}

package forgefake

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/disinto/disinto/lib/forge"
)

// CreateReview submits a formal review on n; authors cannot approve or
// request changes on their own pull requests.
func (r *Repo) CreateReview(ctx context.Context, n int64, in forge.NewReview) (forge.Review, error) {
	if err := r.f.enter("CreateReview"); err != nil {
		return forge.Review{}, err
	}
	defer r.f.mu.Unlock()
	i, err := r.pull(n)
	if err != nil {
		return forge.Review{}, err
	}
	if i.pull.Author == r.login && in.Event != forge.ReviewComment {
		return forge.Review{}, fmt.Errorf("review own pull %s#%d: %w", r.slug, n, forge.ErrInvalid)
	}
	commit := in.CommitID
	if commit == "" {
		commit = i.headSHA()
	}
	rv := forge.Review{ID: r.f.newID(), State: in.Event, Body: in.Body, CommitID: commit, Author: r.login, Submitted: r.f.now()}
	i.reviews = append(i.reviews, rv)
	return rv, nil
}

// ListReviews returns the reviews of n, oldest first; Stale marks reviews
// of an older head.
func (r *Repo) ListReviews(ctx context.Context, n int64) ([]forge.Review, error) {
	if err := r.f.enter("ListReviews"); err != nil {
		return nil, err
	}
	defer r.f.mu.Unlock()
	i, err := r.pull(n)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(i.reviews)
	head := i.headSHA()
	for k := range out {
		out[k].Stale = head != "" && out[k].CommitID != head
	}
	return out, nil
}

// DismissReview dismisses review id on n.
func (r *Repo) DismissReview(ctx context.Context, n, id int64, message string) error {
	if err := r.f.enter("DismissReview"); err != nil {
		return err
	}
	defer r.f.mu.Unlock()
	i, err := r.pull(n)
	if err != nil {
		return err
	}
	for k := range i.reviews {
		if i.reviews[k].ID == id {
			i.reviews[k].Dismissed = true
			return nil
		}
	}
	return notFound("review %d on %s#%d", id, r.slug, n)
}

// CreateStatus records a commit status, replacing one of the same context.
func (r *Repo) CreateStatus(ctx context.Context, sha string, s forge.CommitStatus) error {
	if err := r.f.enter("CreateStatus"); err != nil {
		return err
	}
	defer r.f.mu.Unlock()
	st := r.st()
	s.Updated = r.f.now() // the forge stamps it, whatever the caller said
	st.statuses[sha] = append(slices.DeleteFunc(st.statuses[sha], func(o forge.CommitStatus) bool {
		return o.Context == s.Context
	}), s)
	return nil
}

// CombinedStatus combines the statuses of sha: any error or failure wins,
// then pending, then success; empty when none.
func (r *Repo) CombinedStatus(ctx context.Context, sha string) (forge.CombinedStatus, error) {
	if err := r.f.enter("CombinedStatus"); err != nil {
		return forge.CombinedStatus{}, err
	}
	defer r.f.mu.Unlock()
	out := forge.CombinedStatus{SHA: sha, Statuses: slices.Clone(r.st().statuses[sha])}
	rank := map[forge.CIState]int{forge.CISuccess: 1, forge.CIWarning: 2, forge.CIPending: 3, forge.CIFailure: 4, forge.CIError: 5}
	for _, s := range out.Statuses {
		if rank[s.State] > rank[out.State] {
			out.State = s.State
		}
	}
	return out, nil
}

// GetBranch returns branch name.
func (r *Repo) GetBranch(ctx context.Context, name string) (forge.Branch, error) {
	if err := r.f.enter("GetBranch"); err != nil {
		return forge.Branch{}, err
	}
	defer r.f.mu.Unlock()
	sha, ok := r.st().branches[name]
	if !ok {
		return forge.Branch{}, notFound("branch %s in %s", name, r.slug)
	}
	return forge.Branch{Name: name, SHA: sha}, nil
}

// CreateBranch creates name at ref (a branch name or a known SHA).
func (r *Repo) CreateBranch(ctx context.Context, name, ref string) (forge.Branch, error) {
	if err := r.f.enter("CreateBranch"); err != nil {
		return forge.Branch{}, err
	}
	defer r.f.mu.Unlock()
	s := r.st()
	if _, ok := s.branches[name]; ok {
		return forge.Branch{}, fmt.Errorf("branch %s in %s: %w", name, r.slug, forge.ErrConflict)
	}
	sha, ok := s.branches[ref]
	if !ok {
		sha = ref
	}
	s.branches[name] = sha
	if src, ok := s.files[ref]; ok {
		s.files[name] = cloneFiles(src)
	}
	return forge.Branch{Name: name, SHA: sha}, nil
}

func cloneFiles(m map[string]file) map[string]file {
	out := make(map[string]file, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// DeleteBranch deletes name; missing is fine.
func (r *Repo) DeleteBranch(ctx context.Context, name string) error {
	if err := r.f.enter("DeleteBranch"); err != nil {
		return err
	}
	defer r.f.mu.Unlock()
	delete(r.st().branches, name)
	delete(r.st().files, name)
	return nil
}

// Push moves branch to a new commit, as a git push would; it returns the
// new head SHA. It is a test helper with no forge.RepoClient counterpart.
func (r *Repo) Push(branch string) string {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	sha := r.f.newSHA()
	r.st().branches[branch] = sha
	return sha
}

// GetFile returns the file at path on ref (main when empty).
func (r *Repo) GetFile(ctx context.Context, path, ref string) (forge.File, error) {
	if err := r.f.enter("GetFile"); err != nil {
		return forge.File{}, err
	}
	defer r.f.mu.Unlock()
	if ref == "" {
		ref = "main"
	}
	f, ok := r.st().files[ref][path]
	if !ok {
		return forge.File{}, notFound("file %s at %s in %s", path, ref, r.slug)
	}
	return forge.File{Path: path, SHA: f.sha, Content: slices.Clone(f.content)}, nil
}

// PutFile creates (empty SHA) or updates (matching SHA) a file in one
// commit on the branch.
func (r *Repo) PutFile(ctx context.Context, fc forge.FileChange) (string, error) {
	if err := r.f.enter("PutFile"); err != nil {
		return "", err
	}
	defer r.f.mu.Unlock()
	s := r.st()
	branch := fc.Branch
	if branch == "" {
		branch = "main"
	}
	if _, ok := s.branches[branch]; !ok {
		return "", notFound("branch %s in %s", branch, r.slug)
	}
	if s.files[branch] == nil {
		s.files[branch] = map[string]file{}
	}
	cur, exists := s.files[branch][fc.Path]
	switch {
	case fc.SHA == "" && exists:
		return "", fmt.Errorf("file %s exists in %s: %w", fc.Path, r.slug, forge.ErrInvalid)
	case fc.SHA != "" && !exists:
		return "", notFound("file %s in %s", fc.Path, r.slug)
	case fc.SHA != "" && cur.sha != fc.SHA:
		return "", fmt.Errorf("file %s in %s: stale sha: %w", fc.Path, r.slug, forge.ErrConflict)
	}
	h := sha1.Sum(append([]byte(fmt.Sprintf("blob %d\x00", len(fc.Content))), fc.Content...))
	blob := hex.EncodeToString(h[:])
	s.files[branch][fc.Path] = file{sha: blob, content: slices.Clone(fc.Content)}
	s.branches[branch] = r.f.newSHA()
	return blob, nil
}

// SetBranchProtection sets the rule for p.Branch.
func (r *Repo) SetBranchProtection(ctx context.Context, p forge.Protection) error {
	if err := r.f.enter("SetBranchProtection"); err != nil {
		return err
	}
	defer r.f.mu.Unlock()
	r.st().protection[p.Branch] = p
	return nil
}

package forgefake

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

func (r *Repo) pull(n int64) (*issue, error) {
	i, ok := r.st().issues[n]
	if !ok || i.pull == nil {
		return nil, notFound("pull %s#%d", r.slug, n)
	}
	return i, nil
}

func (r *Repo) pullView(i *issue) forge.PullRequest {
	p := *i.pull
	p.Title, p.Body, p.State, p.Labels = i.Title, i.Body, i.State, slices.Clone(i.Labels)
	if p.State == forge.StateOpen {
		p.HeadSHA = i.headSHA()
	}
	return p
}

// headSHA is the current commit of the pull request's head branch.
func (i *issue) headSHA() string { return i.head.branches[i.pull.Head] }

// CreatePull opens a pull request from head into base; a head of
// "<user>:<branch>" names a branch of user's fork.
func (r *Repo) CreatePull(ctx context.Context, in forge.NewPull) (forge.PullRequest, error) {
	if err := r.f.enter("CreatePull"); err != nil {
		return forge.PullRequest{}, err
	}
	defer r.f.mu.Unlock()
	s := r.st()
	head, branch := s, in.Head
	if user, b, ok := strings.Cut(in.Head, ":"); ok {
		branch = b
		if !strings.EqualFold(user, r.owner) {
			if head = r.f.forkOf(r.slug, user); head == nil {
				return forge.PullRequest{}, notFound("fork of %s by %s", r.slug, user)
			}
		}
	}
	sha, ok := head.branches[branch]
	if _, bok := s.branches[in.Base]; !ok || !bok {
		return forge.PullRequest{}, notFound("branch %s or %s in %s", in.Head, in.Base, r.slug)
	}
	for _, i := range s.issues {
		if i.pull != nil && i.State == forge.StateOpen && i.head == head && i.pull.Head == branch && i.pull.Base == in.Base {
			return forge.PullRequest{}, fmt.Errorf("pull %s->%s exists: %w", in.Head, in.Base, forge.ErrConflict)
		}
	}
	i := r.newIssue(in.Title, in.Body)
	i.head = head
	i.pull = &forge.PullRequest{Number: i.Number, Head: branch, HeadSHA: sha, Base: in.Base, Mergeable: true, Author: r.login, AuthorID: r.f.user(r.login).ID, URL: i.URL,
		HeadRepo: head.slug, FromFork: head != s}
	return r.pullView(i), nil
}

// GetPull returns pull request n.
func (r *Repo) GetPull(ctx context.Context, n int64) (forge.PullRequest, error) {
	if err := r.f.enter("GetPull"); err != nil {
		return forge.PullRequest{}, err
	}
	defer r.f.mu.Unlock()
	i, err := r.pull(n)
	if err != nil {
		return forge.PullRequest{}, err
	}
	return r.pullView(i), nil
}

// ListPulls returns pull requests in state (open when empty), newest first.
func (r *Repo) ListPulls(ctx context.Context, state forge.State) ([]forge.PullRequest, error) {
	if err := r.f.enter("ListPulls"); err != nil {
		return nil, err
	}
	defer r.f.mu.Unlock()
	return r.listPulls(state), nil
}

func (r *Repo) listPulls(state forge.State) []forge.PullRequest {
	if state == "" {
		state = forge.StateOpen
	}
	var out []forge.PullRequest
	for _, i := range r.st().issues {
		if i.pull != nil && (state == forge.StateAll || i.State == state) {
			out = append(out, r.pullView(i))
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Number > out[b].Number })
	return out
}

// FindPullByHead returns the newest pull request with head branch, open
// ones first, or ErrNotFound.
func (r *Repo) FindPullByHead(ctx context.Context, branch string) (forge.PullRequest, error) {
	if err := r.f.enter("FindPullByHead"); err != nil {
		return forge.PullRequest{}, err
	}
	defer r.f.mu.Unlock()
	for _, st := range []forge.State{forge.StateOpen, forge.StateAll} {
		for _, p := range r.listPulls(st) {
			if p.Head == branch {
				return p, nil
			}
		}
	}
	return forge.PullRequest{}, notFound("pull with head %q in %s", branch, r.slug)
}

// PullDiff returns the diff set by SetPullDiff, else a placeholder naming
// the head commit.
func (r *Repo) PullDiff(ctx context.Context, n int64) (string, error) {
	if err := r.f.enter("PullDiff"); err != nil {
		return "", err
	}
	defer r.f.mu.Unlock()
	i, err := r.pull(n)
	if err != nil {
		return "", err
	}
	if i.diff != "" {
		return i.diff, nil
	}
	return fmt.Sprintf("diff --git fake %s..%s\n", i.pull.Base, i.headSHA()), nil
}

// SetPullDiff makes PullDiff of n return diff. It is a test helper with no
// forge.RepoClient counterpart (the fake keeps no file contents per
// commit).
func (r *Repo) SetPullDiff(n int64, diff string) error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	i, err := r.pull(n)
	if err != nil {
		return err
	}
	i.diff = diff
	return nil
}

// ClosePull closes n without merging.
func (r *Repo) ClosePull(ctx context.Context, n int64) error {
	if err := r.f.enter("ClosePull"); err != nil {
		return err
	}
	defer r.f.mu.Unlock()
	i, err := r.pull(n)
	if err != nil {
		return err
	}
	i.pull.HeadSHA = i.headSHA()
	i.State = forge.StateClosed
	return nil
}

// Merge merges n if its head is opts.HeadSHA and protection allows it.
func (r *Repo) Merge(ctx context.Context, n int64, opts forge.MergeOptions) error {
	if err := r.f.enter("Merge"); err != nil {
		return err
	}
	defer r.f.mu.Unlock()
	if opts.HeadSHA == "" {
		return fmt.Errorf("merge %s#%d: head SHA required", r.slug, n)
	}
	i, err := r.pull(n)
	if err != nil {
		return err
	}
	s := r.st()
	switch {
	case i.pull.Merged:
		return fmt.Errorf("merge %s#%d: %w", r.slug, n, forge.ErrAlreadyMerged)
	case i.State != forge.StateOpen:
		return notFound("open pull %s#%d", r.slug, n)
	case i.headSHA() != opts.HeadSHA:
		return fmt.Errorf("merge %s#%d: %w", r.slug, n, forge.ErrHeadMoved)
	}
	if err := r.mergeAllowed(i); err != nil {
		return fmt.Errorf("merge %s#%d: %w: %v", r.slug, n, forge.ErrMergeBlocked, err)
	}
	i.pull.HeadSHA = i.headSHA()
	i.pull.Merged, i.State = true, forge.StateClosed
	i.pull.MergedSHA = r.f.newSHA()
	s.branches[i.pull.Base] = i.pull.MergedSHA
	// Files changed on the head land on the base (no conflict detection).
	if s.files[i.pull.Base] == nil {
		s.files[i.pull.Base] = map[string]file{}
	}
	for path, f := range i.head.files[i.pull.Head] {
		s.files[i.pull.Base][path] = f
	}
	if opts.DeleteBranch && i.head == s {
		delete(s.branches, i.pull.Head)
	}
	return nil
}

func (r *Repo) mergeAllowed(i *issue) error {
	p, ok := r.st().protection[i.pull.Base]
	if !ok {
		return nil
	}
	if len(p.MergeWhitelist) > 0 && !slices.Contains(p.MergeWhitelist, r.login) {
		return fmt.Errorf("%s may not merge into %s", r.login, i.pull.Base)
	}
	head := i.headSHA()
	var approvals int64
	for _, rv := range i.reviews {
		ok := rv.State == forge.ReviewApprove && !rv.Dismissed && (!p.DismissStale || rv.CommitID == head)
		if ok && (len(p.ApprovalsWhitelist) == 0 || slices.Contains(p.ApprovalsWhitelist, rv.Author)) {
			approvals++
		}
	}
	if approvals < p.RequiredApprovals {
		return fmt.Errorf("%d of %d approvals", approvals, p.RequiredApprovals)
	}
	for _, ctxName := range p.StatusChecks {
		if !slices.ContainsFunc(r.st().statuses[head], func(s forge.CommitStatus) bool {
			return s.Context == ctxName && s.State == forge.CISuccess
		}) {
			return fmt.Errorf("status %s not successful", ctxName)
		}
	}
	return nil
}

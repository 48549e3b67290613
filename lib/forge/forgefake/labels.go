package forgefake

import (
	"context"
	"fmt"
	"slices"

	"github.com/disinto/disinto/lib/forge"
)

// ListLabels returns the repository's labels.
func (r *Repo) ListLabels(ctx context.Context) ([]forge.Label, error) {
	if err := r.f.enter("ListLabels"); err != nil {
		return nil, err
	}
	defer r.f.mu.Unlock()
	return slices.Clone(r.st().labels), nil
}

// EnsureLabels creates the registry labels that are missing.
func (r *Repo) EnsureLabels(ctx context.Context) ([]forge.LabelName, error) {
	if err := r.f.enter("EnsureLabels"); err != nil {
		return nil, err
	}
	defer r.f.mu.Unlock()
	s := r.st()
	var created []forge.LabelName
	for _, def := range forge.Registry() {
		if slices.ContainsFunc(s.labels, func(l forge.Label) bool { return l.Name == def.Name }) {
			continue
		}
		def.ID = r.f.newID()
		s.labels = append(s.labels, def)
		created = append(created, def.Name)
	}
	return created, nil
}

func (r *Repo) checkLabels(names []forge.LabelName) error {
	for _, n := range names {
		if !slices.ContainsFunc(r.st().labels, func(l forge.Label) bool { return l.Name == n }) {
			return fmt.Errorf("label %q in %s: %w", n, r.slug, forge.ErrNotFound)
		}
	}
	return nil
}

// AddLabels adds labels to n; present ones stay.
func (r *Repo) AddLabels(ctx context.Context, n int64, names ...forge.LabelName) error {
	if err := r.f.enter("AddLabels"); err != nil {
		return err
	}
	defer r.f.mu.Unlock()
	return r.addLabels(n, names)
}

func (r *Repo) addLabels(n int64, names []forge.LabelName) error {
	if err := r.checkLabels(names); err != nil {
		return err
	}
	i, err := r.issue(n)
	if err != nil {
		return err
	}
	r.applied(i, names, true)
	i.Updated = r.f.now()
	return nil
}

// applied adds (or removes) names on i as the acting user, recording an
// event for each label that changes, as the forge's timeline does.
func (r *Repo) applied(i *issue, names []forge.LabelName, add bool) {
	for _, l := range names {
		if i.HasLabel(l) == add {
			continue
		}
		if add {
			i.Labels = append(i.Labels, l)
		} else {
			i.Labels = slices.DeleteFunc(i.Labels, func(x forge.LabelName) bool { return x == l })
		}
		i.events = append(i.events, forge.LabelEvent{Label: l, Added: add, By: r.f.user(r.login), Created: r.f.now()})
	}
}

// RemoveLabels removes labels from n; absent ones are ignored.
func (r *Repo) RemoveLabels(ctx context.Context, n int64, names ...forge.LabelName) error {
	if err := r.f.enter("RemoveLabels"); err != nil {
		return err
	}
	defer r.f.mu.Unlock()
	return r.removeLabels(n, names)
}

func (r *Repo) removeLabels(n int64, names []forge.LabelName) error {
	if err := r.checkLabels(names); err != nil {
		return err
	}
	i, err := r.issue(n)
	if err != nil {
		return err
	}
	r.applied(i, names, false)
	i.Updated = r.f.now()
	return nil
}

// Claim assigns n to the acting user and moves it from backlog to
// in-progress, atomically; ErrClaimed if anyone holds it or it is closed.
// The fake needs no claim comments, so bots (whose claim comments the
// forge's protocol counts) changes nothing here.
func (r *Repo) Claim(ctx context.Context, n int64, bots []string) (forge.Claim, error) {
	if err := r.f.enter("Claim"); err != nil {
		return forge.Claim{}, err
	}
	defer r.f.mu.Unlock()
	i, err := r.issue(n)
	if err != nil {
		return forge.Claim{}, err
	}
	if len(i.Assignees) > 0 || i.State != forge.StateOpen {
		return forge.Claim{}, fmt.Errorf("claim %s#%d: held by %v: %w", r.slug, n, i.Assignees, forge.ErrClaimed)
	}
	c := forge.Claim{Issue: n, Login: r.login, Added: []forge.LabelName{forge.LabelInProgress}}
	if i.HasLabel(forge.LabelBacklog) {
		c.Removed = []forge.LabelName{forge.LabelBacklog}
	}
	if err := r.addLabels(n, c.Added); err != nil {
		return forge.Claim{}, err
	}
	if err := r.removeLabels(n, c.Removed); err != nil {
		return forge.Claim{}, err
	}
	i.Assignees = []string{r.login}
	return c, nil
}

// Release undoes c.
func (r *Repo) Release(ctx context.Context, c forge.Claim) error {
	if err := r.f.enter("Release"); err != nil {
		return err
	}
	defer r.f.mu.Unlock()
	i, err := r.issue(c.Issue)
	if err != nil {
		return err
	}
	i.Assignees = slices.DeleteFunc(i.Assignees, func(a string) bool { return a == c.Login })
	if err := r.removeLabels(c.Issue, c.Added); err != nil {
		return err
	}
	return r.addLabels(c.Issue, c.Removed)
}

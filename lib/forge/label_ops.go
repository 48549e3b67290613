package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"code.gitea.io/sdk/gitea"
)

// ListLabels returns the repository's labels and refreshes the id cache.
func (r *RepoClient) ListLabels(ctx context.Context) ([]Label, error) {
	api := r.c.api(ctx)
	ls, err := paginate(func(page int) ([]Label, *gitea.Response, error) {
		ls, resp, err := api.ListRepoLabels(r.owner, r.name, gitea.ListLabelsOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize},
		})
		if err := r.c.check("list labels "+r.slug, resp, err); err != nil {
			return nil, resp, err
		}
		res := make([]Label, 0, len(ls))
		for _, l := range ls {
			res = append(res, Label{ID: l.ID, Name: LabelName(l.Name), Color: "#" + trimHash(l.Color), Description: l.Description})
		}
		return res, resp, nil
	})
	if err == nil {
		r.c.labels.replace(r.slug, ls)
	}
	return ls, err
}

func trimHash(s string) string {
	if len(s) > 0 && s[0] == '#' {
		return s[1:]
	}
	return s
}

// EnsureLabels creates every registry label missing from the repository.
// Existing labels are left alone, so it is idempotent. It returns the
// names created.
func (r *RepoClient) EnsureLabels(ctx context.Context) ([]LabelName, error) {
	have, err := r.ListLabels(ctx)
	if err != nil {
		return nil, err
	}
	exists := map[LabelName]bool{}
	for _, l := range have {
		exists[l.Name] = true
	}
	var created []LabelName
	for _, def := range registry {
		if exists[def.Name] {
			continue
		}
		l, resp, err := r.c.api(ctx).CreateLabel(r.owner, r.name, gitea.CreateLabelOption{
			Name: string(def.Name), Color: def.Color, Description: def.Description,
		})
		if err := r.c.check(fmt.Sprintf("create label %q in %s", def.Name, r.slug), resp, err); err != nil {
			return created, err
		}
		r.c.labels.put(r.slug, []Label{{ID: l.ID, Name: def.Name}})
		created = append(created, def.Name)
	}
	return created, nil
}

// labelIDs resolves names to ids, listing labels once on a cache miss.
func (r *RepoClient) labelIDs(ctx context.Context, names []LabelName) ([]int64, error) {
	ids := make([]int64, 0, len(names))
	refreshed := false
	for _, n := range names {
		id, ok := r.c.labels.get(r.slug, n)
		if !ok && !refreshed {
			if _, err := r.ListLabels(ctx); err != nil {
				return nil, err
			}
			refreshed = true
			id, ok = r.c.labels.get(r.slug, n)
		}
		if !ok {
			return nil, fmt.Errorf("label %q in %s: %w (run provisioning to create labels)", n, r.slug, ErrNotFound)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// AddLabels adds labels to issue or pull request n; present ones stay.
//
// The forge silently skips label ids it does not know, so an id cached
// before the label was deleted and recreated would add nothing: the answer
// is checked, and on a miss the ids are looked up afresh and sent again.
func (r *RepoClient) AddLabels(ctx context.Context, n int64, names ...LabelName) error {
	if len(names) == 0 {
		return nil
	}
	for attempt := 0; ; attempt++ {
		ids, err := r.labelIDs(ctx, names)
		if err != nil {
			return err
		}
		// Adding labels is idempotent, so the POST may be retried.
		got, resp, err := r.c.api(withRetryablePost(ctx)).AddIssueLabels(r.owner, r.name, n, gitea.IssueLabelsOption{Labels: ids})
		if err := r.c.check(fmt.Sprintf("add labels %v to %s#%d", names, r.slug, n), resp, err); err != nil {
			return err
		}
		missing := missingLabels(names, got)
		if len(missing) == 0 {
			return nil
		}
		if attempt > 0 {
			return fmt.Errorf("add labels %v to %s#%d: not applied: %w", missing, r.slug, n, ErrNotFound)
		}
		if _, err := r.ListLabels(ctx); err != nil {
			return err
		}
	}
}

// missingLabels returns the names absent from have.
func missingLabels(names []LabelName, have []*gitea.Label) []LabelName {
	var missing []LabelName
	for _, n := range names {
		if !slices.ContainsFunc(have, func(l *gitea.Label) bool { return l != nil && l.Name == string(n) }) {
			missing = append(missing, n)
		}
	}
	return missing
}

// RemoveLabels removes labels from issue or pull request n; absent ones are
// ignored. An id the forge no longer knows (the label was recreated since it
// was cached) is looked up afresh.
func (r *RepoClient) RemoveLabels(ctx context.Context, n int64, names ...LabelName) error {
	if len(names) == 0 {
		return nil
	}
	ids, err := r.labelIDs(ctx, names)
	if err != nil {
		return err
	}
	refreshed := false
	for i := 0; i < len(names); i++ {
		resp, err := r.c.api(ctx).DeleteIssueLabel(r.owner, r.name, n, ids[i])
		err = r.c.check(fmt.Sprintf("remove label %q from %s#%d", names[i], r.slug, n), resp, err)
		if isStatus(err, http.StatusUnprocessableEntity) && !refreshed {
			// The forge answers 422 for an unknown label id.
			if _, lerr := r.ListLabels(ctx); lerr != nil {
				return errors.Join(err, lerr)
			}
			refreshed = true
			if ids, err = r.labelIDs(ctx, names); err != nil {
				return err
			}
			i--
			continue
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}

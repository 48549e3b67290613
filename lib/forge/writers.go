package forge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// Writers returns the active users with write access to the repository,
// with their ids: collaborators with write or admin, members of teams with
// write access and the owner when it is a user, as the forge's list of
// assignees has them. Any identity that can read the repository may ask,
// so a bot with write access needs no admin right for it.
//
// On an organisation's repository the forge's list also holds members of
// teams that may only read pull requests. Each is then confirmed with
// CollaboratorPermission; the forge answers that only a repository admin,
// and when it refuses the list is taken as it is.
func (r *RepoClient) Writers(ctx context.Context) ([]User, error) {
	us, resp, err := r.c.api(ctx).GetAssignees(r.owner, r.name)
	if err := r.c.check("list writers of "+r.slug, resp, err); err != nil {
		return nil, err
	}
	out := make([]User, 0, len(us))
	for _, u := range us {
		if u != nil && u.ID > 0 {
			out = append(out, toUser(u))
		}
	}
	// A bot's token may not read organisations (no read:organization
	// scope): then the owner may be one.
	org, err := r.c.IsOrg(ctx, r.owner)
	switch {
	case err != nil && !errors.Is(err, ErrForbidden):
		return nil, err
	case err == nil && !org:
		return out, nil
	}
	kept := out[:0:0]
	for i, u := range out {
		p, err := r.CollaboratorPermission(ctx, u.Login)
		switch {
		case errors.Is(err, ErrForbidden):
			return append(kept, out[i:]...), nil
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			return nil, err
		case p.CanWrite():
			kept = append(kept, u)
		}
	}
	return kept, nil
}

// LabelEvent is one label applied to or removed from an issue or pull
// request, and who did it, from its timeline.
type LabelEvent struct {
	Label LabelName
	// Added is false for a removal.
	Added   bool
	By      User
	Created time.Time
}

// timelineEvent is the part of a timeline entry LabelEvents reads.
type timelineEvent struct {
	Type string `json:"type"`
	Body string `json:"body"`
	User *struct {
		ID    int64  `json:"id"`
		Login string `json:"login"`
	} `json:"user"`
	Label *struct {
		Name string `json:"name"`
	} `json:"label"`
	Created time.Time `json:"created_at"`
}

// LabelEvents returns the label events of issue or pull request n, oldest
// first. Creating an issue with labels records them as applied by its
// author. A label since deleted from the repository is left out. (Both
// forges answer a server error, not "not found", for a missing issue.)
//
// The SDK's timeline type expects a list under "label" where Gitea and
// Forgejo send one label, so the endpoint is read raw.
func (r *RepoClient) LabelEvents(ctx context.Context, n int64) ([]LabelEvent, error) {
	evs, err := r.timeline(ctx, n)
	if err != nil {
		return nil, err
	}
	var out []LabelEvent
	for _, e := range evs {
		if e.Type != "label" || e.Label == nil || e.User == nil || e.Label.Name == "" {
			continue
		}
		// The forge writes "1" for an application, nothing for a
		// removal.
		out = append(out, LabelEvent{Label: LabelName(e.Label.Name), Added: e.Body == "1",
			By: User{ID: e.User.ID, Login: e.User.Login}, Created: e.Created})
	}
	return out, nil
}

// Reopenings returns when issue or pull request n was reopened, oldest
// first.
func (r *RepoClient) Reopenings(ctx context.Context, n int64) ([]time.Time, error) {
	evs, err := r.timeline(ctx, n)
	if err != nil {
		return nil, err
	}
	var out []time.Time
	for _, e := range evs {
		if e.Type == "reopen" {
			out = append(out, e.Created)
		}
	}
	return out, nil
}

// timeline reads the timeline of issue or pull request n, oldest first.
// Its total count header counts the page, not the list, and entries the
// reader may not see are dropped from a page after paging, so a short
// page proves nothing: pages are read until one comes back empty.
func (r *RepoClient) timeline(ctx context.Context, n int64) ([]timelineEvent, error) {
	var out []timelineEvent
	for page := 1; page <= maxPages; page++ {
		var evs []timelineEvent
		q := url.Values{"page": {strconv.Itoa(page)}, "limit": {strconv.Itoa(pageSize)}}
		if err := r.c.do(ctx, "GET", r.path("/issues/%d/timeline", n), q, nil, &evs); err != nil {
			return out, fmt.Errorf("timeline of %s#%d: %w", r.slug, n, err)
		}
		if len(evs) == 0 {
			return out, nil
		}
		out = append(out, evs...)
	}
	return out, fmt.Errorf("timeline of %s#%d: %d pages of %d: %w", r.slug, n, maxPages, pageSize, ErrPageCap)
}

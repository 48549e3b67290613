package forge

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// OwnersTeam is the team of an organisation whose members own it.
const OwnersTeam = "Owners"

// RepoOwners returns the humans who own a repository of owner: owner
// itself when it is a user, the members of the organisation's Owners team
// when it is an organisation. Listing an organisation's teams takes a
// member of it or a site admin; anyone else gets ErrForbidden (or
// ErrNotFound for a private organisation).
func (c *Client) RepoOwners(ctx context.Context, owner string) ([]string, error) {
	org, err := c.IsOrg(ctx, owner)
	if err != nil {
		return nil, err
	}
	if !org {
		return []string{owner}, nil
	}
	var teams []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	if err := c.do(ctx, "GET", "/orgs/"+url.PathEscape(owner)+"/teams", url.Values{"limit": {"50"}}, nil, &teams); err != nil {
		return nil, fmt.Errorf("list teams of %s: %w", owner, err)
	}
	for _, t := range teams {
		if !strings.EqualFold(t.Name, OwnersTeam) {
			continue
		}
		var members []struct {
			Login string `json:"login"`
		}
		if err := c.do(ctx, "GET", fmt.Sprintf("/teams/%d/members", t.ID), url.Values{"limit": {"50"}}, nil, &members); err != nil {
			return nil, fmt.Errorf("list owners of %s: %w", owner, err)
		}
		out := make([]string, 0, len(members))
		for _, m := range members {
			if m.Login != "" {
				out = append(out, m.Login)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("organisation %s has no %s team: %w", owner, OwnersTeam, ErrNotFound)
}

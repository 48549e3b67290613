package forge

import (
	"context"
	"fmt"

	"code.gitea.io/sdk/gitea"
)

// NewUser describes an account created by an admin.
type NewUser struct {
	Login    string
	Email    string
	Password string
}

// CreateUser creates an account (requires a site-admin client). The
// password need not be changed at first login.
func (c *Client) CreateUser(ctx context.Context, in NewUser) (User, error) {
	no := false
	u, resp, err := c.api(ctx).AdminCreateUser(gitea.CreateUserOption{
		Username: in.Login, LoginName: in.Login, Email: in.Email, Password: in.Password, MustChangePassword: &no,
	})
	if err := c.check("create user "+in.Login, resp, err); err != nil {
		return User{}, err
	}
	return toUser(u), nil
}

// GetUser returns the account login.
func (c *Client) GetUser(ctx context.Context, login string) (User, error) {
	u, resp, err := c.api(ctx).GetUserInfo(login)
	if err := c.check("get user "+login, resp, err); err != nil {
		return User{}, err
	}
	return toUser(u), nil
}

// Token scopes used by provisioning (Gitea/Forgejo names).
const (
	ScopeAll             = "all"
	ScopeReadRepository  = "read:repository"
	ScopeWriteRepository = "write:repository"
	ScopeReadIssue       = "read:issue"
	ScopeWriteIssue      = "write:issue"
	ScopeReadUser        = "read:user"
	ScopeWriteUser       = "write:user"
	ScopeReadOrg         = "read:organization"
	ScopeWriteOrg        = "write:organization"
	ScopeWriteAdmin      = "write:admin"
)

// CreateToken creates an API token for the client's own user. Forges only
// allow this with basic auth: build the client with Options.Password.
// The secret is in the returned value; it cannot be read again later.
func (c *Client) CreateToken(ctx context.Context, name string, scopes ...string) (string, error) {
	if c.password == "" {
		return "", fmt.Errorf("create token %q for %s: needs basic auth (Options.Password)", name, c.user)
	}
	ss := make([]gitea.AccessTokenScope, 0, len(scopes))
	for _, s := range scopes {
		ss = append(ss, gitea.AccessTokenScope(s))
	}
	t, resp, err := c.api(ctx).CreateAccessToken(gitea.CreateAccessTokenOption{Name: name, Scopes: ss})
	if err := c.check(fmt.Sprintf("create token %q for %s", name, c.user), resp, err); err != nil {
		return "", err
	}
	return t.Token, nil
}

// DeleteToken deletes the client user's token called name.
func (c *Client) DeleteToken(ctx context.Context, name string) error {
	resp, err := c.api(ctx).DeleteAccessToken(name)
	return c.check(fmt.Sprintf("delete token %q of %s", name, c.user), resp, err)
}

// Token is one of a user's API tokens as the forge lists it: never its
// value, only its end.
type Token struct {
	ID        int64
	Name      string
	LastEight string
}

// ListTokens returns every token of the client's user. Like all token
// calls it needs basic auth.
func (c *Client) ListTokens(ctx context.Context) ([]Token, error) {
	api := c.api(ctx)
	return paginate(func(page int) ([]Token, *gitea.Response, error) {
		ts, resp, err := api.ListAccessTokens(gitea.ListAccessTokensOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize},
		})
		if err := c.check("list tokens of "+c.user, resp, err); err != nil {
			return nil, resp, err
		}
		out := make([]Token, 0, len(ts))
		for _, t := range ts {
			out = append(out, Token{ID: t.ID, Name: t.Name, LastEight: t.TokenLastEight})
		}
		return out, resp, nil
	})
}

// DeleteTokenID deletes the client user's token with the given id.
func (c *Client) DeleteTokenID(ctx context.Context, id int64) error {
	resp, err := c.api(ctx).DeleteAccessToken(id)
	return c.check(fmt.Sprintf("delete token %d of %s", id, c.user), resp, err)
}

// CreateOrg creates an organisation owned by the client's user.
func (c *Client) CreateOrg(ctx context.Context, name string) (User, error) {
	o, resp, err := c.api(ctx).CreateOrg(gitea.CreateOrgOption{Name: name, Visibility: gitea.VisibleTypePublic})
	if err := c.check("create org "+name, resp, err); err != nil {
		return User{}, err
	}
	return User{ID: o.ID, Login: o.Name}, nil
}

// NewRepo describes a repository to create.
type NewRepo struct {
	// Owner is an organisation, or empty for the client's own user (see
	// CreateRepoFor for other users' namespaces).
	Owner         string
	Name          string
	Description   string
	Private       bool
	AutoInit      bool // initial commit with a README
	DefaultBranch string
}

// CreateRepo creates a repository under an organisation or the client's
// user.
func (c *Client) CreateRepo(ctx context.Context, in NewRepo) (Repo, error) {
	opt := gitea.CreateRepoOption{
		Name: in.Name, Description: in.Description, Private: in.Private,
		AutoInit: in.AutoInit, DefaultBranch: in.DefaultBranch,
	}
	if in.AutoInit {
		opt.Readme = "Default"
	}
	var (
		r    *gitea.Repository
		resp *gitea.Response
		err  error
	)
	if in.Owner == "" {
		r, resp, err = c.api(ctx).CreateRepo(opt)
	} else {
		r, resp, err = c.api(ctx).CreateOrgRepo(in.Owner, opt)
	}
	if err := c.check(fmt.Sprintf("create repo %s/%s", in.Owner, in.Name), resp, err); err != nil {
		return Repo{}, err
	}
	return toRepo(r), nil
}

// Permission is a collaborator access level.
type Permission string

// Collaborator permissions. PermNone and PermOwner are only reported by
// CollaboratorPermission (the owner and site admins have PermOwner).
const (
	PermNone  Permission = "none"
	PermRead  Permission = "read"
	PermWrite Permission = "write"
	PermAdmin Permission = "admin"
	PermOwner Permission = "owner"
)

// CanWrite reports whether p allows pushing to and approving in the
// repository: write, admin or owner.
func (p Permission) CanWrite() bool {
	switch p {
	case PermWrite, PermAdmin, PermOwner:
		return true
	}
	return false
}

// AddCollaborator grants login perm on the repository (idempotent).
func (r *RepoClient) AddCollaborator(ctx context.Context, login string, perm Permission) error {
	p := gitea.AccessMode(perm)
	resp, err := r.c.api(ctx).AddCollaborator(r.owner, r.name, login, gitea.AddCollaboratorOption{Permission: &p})
	return r.c.check(fmt.Sprintf("add collaborator %s to %s", login, r.slug), resp, err)
}

// Protection is a branch protection rule.
type Protection struct {
	Branch             string
	RequiredApprovals  int64
	ApprovalsWhitelist []string // users whose approvals count
	MergeWhitelist     []string // users who may merge
	PushWhitelist      []string // users who may push; empty blocks pushes
	StatusChecks       []string // required CI contexts
	BlockOnRejected    bool
	DismissStale       bool
}

// SetBranchProtection creates or replaces the rule for p.Branch.
func (r *RepoClient) SetBranchProtection(ctx context.Context, p Protection) error {
	opt := gitea.CreateBranchProtectionOption{
		BranchName: p.Branch, RuleName: p.Branch,
		EnablePush: len(p.PushWhitelist) > 0, EnablePushWhitelist: len(p.PushWhitelist) > 0,
		PushWhitelistUsernames: p.PushWhitelist,
		EnableMergeWhitelist:   len(p.MergeWhitelist) > 0, MergeWhitelistUsernames: p.MergeWhitelist,
		EnableStatusCheck: len(p.StatusChecks) > 0, StatusCheckContexts: p.StatusChecks,
		RequiredApprovals:        p.RequiredApprovals,
		EnableApprovalsWhitelist: len(p.ApprovalsWhitelist) > 0, ApprovalsWhitelistUsernames: p.ApprovalsWhitelist,
		BlockOnRejectedReviews: p.BlockOnRejected, DismissStaleApprovals: p.DismissStale,
	}
	api := r.c.api(ctx)
	_, resp, err := api.GetBranchProtection(r.owner, r.name, p.Branch)
	if resp != nil && resp.StatusCode == 404 {
		_, resp, err = api.CreateBranchProtection(r.owner, r.name, opt)
		return r.c.check(fmt.Sprintf("protect branch %s in %s", p.Branch, r.slug), resp, err)
	}
	if err := r.c.check(fmt.Sprintf("get protection of %s in %s", p.Branch, r.slug), resp, err); err != nil {
		return err
	}
	// Editing takes the same JSON fields as creating, minus the names: the
	// path names the rule, and neither Gitea nor Forgejo reads them there.
	opt.BranchName, opt.RuleName = "", ""
	if err := r.c.do(ctx, "PATCH", r.path("/branch_protections/%s", escapePath(p.Branch)), nil, opt, nil); err != nil {
		return fmt.Errorf("edit protection of %s in %s: %w", p.Branch, r.slug, err)
	}
	return nil
}

// NewWebhook describes a Gitea-type webhook.
type NewWebhook struct {
	URL    string
	Secret string
	Events []string // e.g. issues, issue_comment, pull_request, pull_request_review, status
}

// CreateWebhook adds a JSON webhook signed with Secret.
func (r *RepoClient) CreateWebhook(ctx context.Context, in NewWebhook) (Webhook, error) {
	h, resp, err := r.c.api(ctx).CreateRepoHook(r.owner, r.name, gitea.CreateHookOption{
		Type:   gitea.HookTypeGitea,
		Config: map[string]string{"url": in.URL, "content_type": "json", "secret": in.Secret},
		Events: in.Events, Active: true,
	})
	if err := r.c.check("create webhook in "+r.slug, resp, err); err != nil {
		return Webhook{}, err
	}
	return toHook(h), nil
}

// ListWebhooks returns the repository's webhooks.
func (r *RepoClient) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	api := r.c.api(ctx)
	return paginate(func(page int) ([]Webhook, *gitea.Response, error) {
		hs, resp, err := api.ListRepoHooks(r.owner, r.name, gitea.ListHooksOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: pageSize},
		})
		if err := r.c.check("list webhooks "+r.slug, resp, err); err != nil {
			return nil, resp, err
		}
		res := make([]Webhook, 0, len(hs))
		for _, h := range hs {
			res = append(res, toHook(h))
		}
		return res, resp, nil
	})
}

package forge

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"sort"
)

// This file holds the forge calls only provisioning needs: admin edits of
// users, repositories created in another user's namespace, reading branch
// protection back, editing webhooks and multi-file commits.

// SetUserPassword sets login's password as a site admin and clears the
// must-change-password flag, so the account can authenticate at once.
func (c *Client) SetUserPassword(ctx context.Context, login, password string) error {
	no := false
	in := struct {
		SourceID           int64  `json:"source_id"`
		LoginName          string `json:"login_name"`
		Password           string `json:"password"`
		MustChangePassword *bool  `json:"must_change_password"`
	}{LoginName: login, Password: password, MustChangePassword: &no}
	if err := c.do(ctx, "PATCH", "/admin/users/"+url.PathEscape(login), nil, in, nil); err != nil {
		return fmt.Errorf("set password of %s: %w", login, err)
	}
	return nil
}

// CreateRepoFor creates a repository in the namespace of user owner, as a
// site admin (used for the bots' .profile repositories). in.Owner is
// ignored.
func (c *Client) CreateRepoFor(ctx context.Context, owner string, in NewRepo) (Repo, error) {
	body := map[string]any{
		"name": in.Name, "description": in.Description, "private": in.Private,
		"auto_init": in.AutoInit, "default_branch": in.DefaultBranch,
	}
	if in.AutoInit {
		body["readme"] = "Default"
	}
	var out struct {
		ID            int64  `json:"id"`
		Name          string `json:"name"`
		FullName      string `json:"full_name"`
		DefaultBranch string `json:"default_branch"`
		Private       bool   `json:"private"`
		CloneURL      string `json:"clone_url"`
		Empty         bool   `json:"empty"`
	}
	if err := c.do(ctx, "POST", "/admin/users/"+url.PathEscape(owner)+"/repos", nil, body, &out); err != nil {
		return Repo{}, fmt.Errorf("create repo %s/%s: %w", owner, in.Name, err)
	}
	return Repo{ID: out.ID, Owner: owner, Name: out.Name, FullName: out.FullName, DefaultBranch: out.DefaultBranch,
		Private: out.Private, CloneURL: out.CloneURL, Empty: out.Empty}, nil
}

// protectionJSON is the wire shape of a branch protection rule.
type protectionJSON struct {
	RuleName                    string   `json:"rule_name"`
	BranchName                  string   `json:"branch_name"`
	EnablePush                  bool     `json:"enable_push"`
	EnablePushWhitelist         bool     `json:"enable_push_whitelist"`
	PushWhitelistUsernames      []string `json:"push_whitelist_usernames"`
	EnableMergeWhitelist        bool     `json:"enable_merge_whitelist"`
	MergeWhitelistUsernames     []string `json:"merge_whitelist_usernames"`
	EnableStatusCheck           bool     `json:"enable_status_check"`
	StatusCheckContexts         []string `json:"status_check_contexts"`
	RequiredApprovals           int64    `json:"required_approvals"`
	EnableApprovalsWhitelist    bool     `json:"enable_approvals_whitelist"`
	ApprovalsWhitelistUsernames []string `json:"approvals_whitelist_username"`
	BlockOnRejectedReviews      bool     `json:"block_on_rejected_reviews"`
	DismissStaleApprovals       bool     `json:"dismiss_stale_approvals"`
}

// GetBranchProtection reads the rule named branch back. Whitelists are
// returned only when enabled, sorted, so two rules compare with Equal.
func (r *RepoClient) GetBranchProtection(ctx context.Context, branch string) (Protection, error) {
	var p protectionJSON
	if err := r.c.do(ctx, "GET", r.path("/branch_protections/%s", escapePath(branch)), nil, nil, &p); err != nil {
		return Protection{}, fmt.Errorf("get protection of %s in %s: %w", branch, r.slug, err)
	}
	name := p.RuleName
	if name == "" {
		name = p.BranchName
	}
	out := Protection{
		Branch: name, RequiredApprovals: p.RequiredApprovals,
		BlockOnRejected: p.BlockOnRejectedReviews, DismissStale: p.DismissStaleApprovals,
	}
	if p.EnableApprovalsWhitelist {
		out.ApprovalsWhitelist = sorted(p.ApprovalsWhitelistUsernames)
	}
	if p.EnableMergeWhitelist {
		out.MergeWhitelist = sorted(p.MergeWhitelistUsernames)
	}
	if p.EnablePush && p.EnablePushWhitelist {
		out.PushWhitelist = sorted(p.PushWhitelistUsernames)
	} else if p.EnablePush {
		// Pushes allowed to everyone with write access: not expressible as
		// a whitelist, so mark it so that Equal never matches a locked rule.
		out.PushWhitelist = []string{"*"}
	}
	if p.EnableStatusCheck {
		out.StatusChecks = sorted(p.StatusCheckContexts)
	}
	return out, nil
}

// Equal reports whether two rules have the same effect (whitelists compare
// as sets).
func (p Protection) Equal(o Protection) bool {
	return p.Branch == o.Branch && p.RequiredApprovals == o.RequiredApprovals &&
		p.BlockOnRejected == o.BlockOnRejected && p.DismissStale == o.DismissStale &&
		sameSet(p.ApprovalsWhitelist, o.ApprovalsWhitelist) && sameSet(p.MergeWhitelist, o.MergeWhitelist) &&
		sameSet(p.PushWhitelist, o.PushWhitelist) && sameSet(p.StatusChecks, o.StatusChecks)
}

func sorted(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func sameSet(a, b []string) bool {
	a, b = sorted(a), sorted(b)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// EditWebhook replaces the URL, secret and events of webhook id and makes
// it active.
func (r *RepoClient) EditWebhook(ctx context.Context, id int64, in NewWebhook) error {
	body := map[string]any{
		"config": map[string]string{"url": in.URL, "content_type": "json", "secret": in.Secret},
		"events": in.Events, "active": true,
	}
	if err := r.c.do(ctx, "PATCH", r.path("/hooks/%d", id), nil, body, nil); err != nil {
		return fmt.Errorf("edit webhook %d in %s: %w", id, r.slug, err)
	}
	return nil
}

// NewFile is one file of a multi-file commit.
type NewFile struct {
	Path    string
	Content []byte
}

// CreateFiles creates files on branch in one commit. Any file that already
// exists fails the whole commit (ErrInvalid or ErrConflict).
func (r *RepoClient) CreateFiles(ctx context.Context, branch, message string, files []NewFile) error {
	type op struct {
		Operation string `json:"operation"`
		Path      string `json:"path"`
		Content   string `json:"content"`
	}
	ops := make([]op, 0, len(files))
	for _, f := range files {
		ops = append(ops, op{Operation: "create", Path: f.Path, Content: base64.StdEncoding.EncodeToString(f.Content)})
	}
	body := map[string]any{"branch": branch, "message": message, "files": ops}
	if err := r.c.do(ctx, "POST", r.path("/contents"), nil, body, nil); err != nil {
		return fmt.Errorf("commit %d files to %s in %s: %w", len(files), branch, r.slug, err)
	}
	return nil
}

// ListTree returns the paths of every file (blob) reachable from ref.
func (r *RepoClient) ListTree(ctx context.Context, ref string) ([]string, error) {
	var paths []string
	for page := 1; page <= maxPages; page++ {
		var t struct {
			Tree []struct {
				Path string `json:"path"`
				Type string `json:"type"`
			} `json:"tree"`
			Truncated  bool `json:"truncated"`
			TotalCount int  `json:"total_count"`
		}
		q := url.Values{"recursive": {"true"}, "page": {fmt.Sprint(page)}, "per_page": {"1000"}}
		if err := r.c.do(ctx, "GET", r.path("/git/trees/%s", escapePath(ref)), q, nil, &t); err != nil {
			return nil, fmt.Errorf("list tree %s in %s: %w", ref, r.slug, err)
		}
		for _, e := range t.Tree {
			if e.Type == "blob" {
				paths = append(paths, e.Path)
			}
		}
		if !t.Truncated || len(t.Tree) == 0 {
			return paths, nil
		}
	}
	return paths, fmt.Errorf("list tree %s in %s: %w", ref, r.slug, ErrPageCap)
}

// IsOrg reports whether name is an organisation (false for a user or a
// missing account).
func (c *Client) IsOrg(ctx context.Context, name string) (bool, error) {
	err := c.do(ctx, "GET", "/orgs/"+url.PathEscape(name), nil, nil, nil)
	switch {
	case err == nil:
		return true, nil
	case isStatus(err, 404):
		return false, nil
	}
	return false, fmt.Errorf("get org %s: %w", name, err)
}

// CollaboratorPermission returns login's effective permission on the
// repository (none, read, write, admin or owner). The forge answers only a
// site admin, a repository admin or login itself (else ErrForbidden); an
// unknown login is ErrNotFound.
func (r *RepoClient) CollaboratorPermission(ctx context.Context, login string) (Permission, error) {
	var out struct {
		Permission string `json:"permission"`
	}
	if err := r.c.do(ctx, "GET", r.path("/collaborators/%s/permission", url.PathEscape(login)), nil, nil, &out); err != nil {
		return "", fmt.Errorf("get permission of %s on %s: %w", login, r.slug, err)
	}
	return Permission(out.Permission), nil
}

// EditLabel sets the colour and description of label id.
func (r *RepoClient) EditLabel(ctx context.Context, id int64, color, description string) error {
	body := map[string]string{"color": color, "description": description}
	if err := r.c.do(ctx, "PATCH", r.path("/labels/%d", id), nil, body, nil); err != nil {
		return fmt.Errorf("edit label %d in %s: %w", id, r.slug, err)
	}
	return nil
}

// IsCollaborator reports whether login is an explicit collaborator of the
// repository (effective read access on a public repository is not).
func (r *RepoClient) IsCollaborator(ctx context.Context, login string) (bool, error) {
	err := r.c.do(ctx, "GET", r.path("/collaborators/%s", url.PathEscape(login)), nil, nil, nil)
	switch {
	case err == nil:
		return true, nil
	case isStatus(err, 404):
		return false, nil
	}
	return false, fmt.Errorf("check collaborator %s on %s: %w", login, r.slug, err)
}

// EnsureManualMerge lets the repository's pull requests be marked as
// merged by a commit already on their base branch, which is how a merge
// that the forge pushed but never recorded gets recorded (see Merge). It
// reports whether the setting had to be changed. Forgejo takes the
// setting but does not show it in its repository answer: there it is set
// on every call (which changes nothing once it is on) and reported
// unchanged, so provisioning does not claim a change on every run.
func (r *RepoClient) EnsureManualMerge(ctx context.Context) (changed bool, err error) {
	var cur struct {
		AllowManualMerge *bool `json:"allow_manual_merge"`
	}
	if err := r.c.do(ctx, "GET", r.path(""), nil, nil, &cur); err != nil {
		return false, fmt.Errorf("get repo %s: %w", r.slug, err)
	}
	if cur.AllowManualMerge != nil && *cur.AllowManualMerge {
		return false, nil
	}
	body := map[string]any{"allow_manual_merge": true}
	if err := r.c.do(ctx, "PATCH", r.path(""), nil, body, nil); err != nil {
		return false, fmt.Errorf("allow manual merges in %s: %w", r.slug, err)
	}
	return cur.AllowManualMerge != nil, nil
}

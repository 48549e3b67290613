package provision

import (
	"context"
	"fmt"
	"strings"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
)

// ensureCollaborators grants every bot its permission on the project and
// ops repositories, reconciling drift on every run. One report line per
// repository lists what changed.
func (p *run) ensureCollaborators(ctx context.Context) error {
	for _, repo := range []string{p.name, p.opsName()} {
		rc := p.admin.Repo(p.owner, repo)
		var changed, all []string
		for _, b := range p.bots {
			want := b.Project
			if repo != p.name {
				want = b.Ops
			}
			if want == "" {
				continue
			}
			all = append(all, b.Login+":"+string(want))
			member, err := rc.IsCollaborator(ctx, b.Login)
			if err != nil {
				return err
			}
			if member {
				have, err := rc.CollaboratorPermission(ctx, b.Login)
				if err != nil {
					return err
				}
				if have == want {
					continue
				}
			}
			if err := rc.AddCollaborator(ctx, b.Login, want); err != nil {
				return err
			}
			changed = append(changed, b.Login+":"+string(want))
		}
		switch {
		case len(changed) == len(all):
			p.rep.add("collaborators", rc.Slug(), StatusCreated, strings.Join(all, " "))
		case len(changed) > 0:
			p.rep.add("collaborators", rc.Slug(), StatusUpdated, strings.Join(changed, " "))
		default:
			p.rep.add("collaborators", rc.Slug(), StatusPresent, strings.Join(all, " "))
		}
	}
	return nil
}

// ensureLabels creates the label vocabulary on both repositories and
// resets colours and descriptions that drifted from the registry.
func (p *run) ensureLabels(ctx context.Context) error {
	for _, repo := range []string{p.name, p.opsName()} {
		rc := p.admin.Repo(p.owner, repo)
		created, err := rc.EnsureLabels(ctx)
		if err != nil {
			return err
		}
		have, err := rc.ListLabels(ctx)
		if err != nil {
			return err
		}
		var fixed []string
		for _, l := range have {
			def, ok := forge.Definition(l.Name)
			if !ok || (strings.EqualFold(l.Color, def.Color) && l.Description == def.Description) {
				continue
			}
			if err := rc.EditLabel(ctx, l.ID, def.Color, def.Description); err != nil {
				return err
			}
			fixed = append(fixed, string(l.Name))
		}
		total := len(forge.Registry())
		switch {
		case len(created) > 0:
			p.rep.add("labels", rc.Slug(), StatusCreated, fmt.Sprintf("%d of %d labels", len(created), total))
		case len(fixed) > 0:
			p.rep.add("labels", rc.Slug(), StatusUpdated, "colour or description reset: "+strings.Join(fixed, ", "))
		default:
			p.rep.add("labels", rc.Slug(), StatusPresent, fmt.Sprintf("%d labels", total))
		}
	}
	return nil
}

// projectProtection is the rule of the project's primary branch: nobody
// pushes, one approval that counts only from review-bot, only dev
// identities merge, a rejection blocks, a push dismisses approvals (the dev
// agent merges pinned to the reviewed head).
func (p *run) projectProtection() forge.Protection {
	return forge.Protection{
		Branch:             p.branch,
		RequiredApprovals:  1,
		ApprovalsWhitelist: []string{config.DefaultBotUser(config.RoleReview)},
		MergeWhitelist:     append([]string{config.DefaultBotUser(config.RoleDev)}, p.localDevs...),
		BlockOnRejected:    true,
		DismissStale:       true,
	}
}

// opsProtection is the vault protection of the ops primary branch: bots
// reach it only through pull requests that an administrator approves and
// merges; the administrator may push (to repair the layout), and so may
// the vault bot, which commits low-tier actions and the dispatcher's
// result records (the dispatcher runs a pushed action only if its own
// classification is low; every other tier needs the approved pull
// request), and the planner bot, which commits its own files (the
// prerequisite tree and its memory) directly, each commit naming its run,
// so the tree never waits on a pull request nothing reviews. A direct
// commit by any identity but the vault bot never makes an action run: the
// dispatcher binds every action to the vault bot's commit or to an
// approved, merged pull request.
func (p *run) opsProtection(branch string) forge.Protection {
	return forge.Protection{
		Branch:             branch,
		RequiredApprovals:  1,
		ApprovalsWhitelist: []string{p.login},
		MergeWhitelist:     []string{p.login},
		PushWhitelist:      []string{p.login, config.DefaultBotUser(config.RoleVault), config.DefaultBotUser(config.RolePlanner)},
		BlockOnRejected:    true,
		DismissStale:       true,
	}
}

// ensureProtection applies both rules, then reads them back: a rule the
// forge did not store as asked is an error.
func (p *run) ensureProtection(ctx context.Context) error {
	ops := p.admin.Repo(p.owner, p.opsName())
	opsRepo, err := ops.Get(ctx)
	if err != nil {
		return err
	}
	opsBranch := opsRepo.DefaultBranch
	if opsBranch == "" {
		opsBranch = p.branch
	}
	rules := []struct {
		rc   *forge.RepoClient
		want forge.Protection
	}{
		{p.admin.Repo(p.owner, p.name), p.projectProtection()},
		{ops, p.opsProtection(opsBranch)},
	}
	for _, r := range rules {
		name := r.rc.Slug() + "@" + r.want.Branch
		detail := describe(r.want)
		have, err := r.rc.GetBranchProtection(ctx, r.want.Branch)
		if err == nil && have.Equal(r.want) {
			p.rep.add("protection", name, StatusPresent, detail)
			continue
		}
		st := StatusUpdated
		if err != nil {
			if !isNotFound(err) {
				return err
			}
			st = StatusCreated
		}
		if err := r.rc.SetBranchProtection(ctx, r.want); err != nil {
			return err
		}
		have, err = r.rc.GetBranchProtection(ctx, r.want.Branch)
		if err != nil {
			return err
		}
		if !have.Equal(r.want) {
			return fmt.Errorf("protection of %s: the forge stored %s, want %s", name, describe(have), detail)
		}
		p.rep.add("protection", name, st, detail)
	}
	return nil
}

func describe(pr forge.Protection) string {
	push := "no push"
	if len(pr.PushWhitelist) > 0 {
		push = "push: " + strings.Join(pr.PushWhitelist, ",")
	}
	return fmt.Sprintf("%s; %d approval from %s; merge: %s", push, pr.RequiredApprovals,
		strings.Join(pr.ApprovalsWhitelist, ","), strings.Join(pr.MergeWhitelist, ","))
}

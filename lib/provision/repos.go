package provision

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/vision"
	"github.com/disinto/disinto/lib/wait"
)

// createRepo creates owner/name under the project owner: the admin's own
// namespace, an organisation, or another user's namespace.
func (p *run) createRepo(ctx context.Context, in forge.NewRepo) (forge.Repo, error) {
	if strings.EqualFold(p.owner, p.login) {
		return p.admin.CreateRepo(ctx, in)
	}
	org, err := p.admin.IsOrg(ctx, p.owner)
	if err != nil {
		return forge.Repo{}, err
	}
	if org {
		in.Owner = p.owner
		return p.admin.CreateRepo(ctx, in)
	}
	return p.admin.CreateRepoFor(ctx, p.owner, in)
}

// ensureProjectRepo creates the project repository (from Source when
// given) and makes sure its primary branch exists; a repository it
// creates empty (no Source) gets the vision template and the issue forms.
func (p *run) ensureProjectRepo(ctx context.Context) error {
	if err := p.ensureProjectBranch(ctx); err != nil || !p.projectCreated {
		return err
	}
	return p.seedProject(ctx)
}

// seedProject adds to the new project repository the files it lacks of
// the vision template (which the planner takes for no vision until a
// maintainer writes one) and the issue forms, in one commit.
func (p *run) seedProject(ctx context.Context) error {
	rc := p.admin.Repo(p.owner, p.name)
	have, err := rc.ListTree(ctx, p.branch)
	if err != nil {
		return err
	}
	want := []forge.NewFile{{Path: vision.Path, Content: []byte(vision.Template(p.name))}}
	forms := vision.IssueTemplates()
	paths := make([]string, 0, len(forms))
	for path := range forms {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		want = append(want, forge.NewFile{Path: path, Content: []byte(forms[path])})
	}
	missing := missingFiles(want, have)
	if len(missing) == 0 {
		return nil
	}
	if err := rc.CreateFiles(ctx, p.branch, "chore: seed the vision template and the issue forms", missing); err != nil {
		return err
	}
	p.rep.add("project files", rc.Slug()+"@"+p.branch, StatusCreated, fmt.Sprintf("%d files: %s (a template until a maintainer writes the vision)", len(missing), vision.Path))
	return nil
}

// ensureProjectBranch creates the project repository (from Source when
// given) and makes sure its primary branch exists.
func (p *run) ensureProjectBranch(ctx context.Context) error {
	rc := p.admin.Repo(p.owner, p.name)
	slug := rc.Slug()
	repo, err := rc.Get(ctx)
	exists := err == nil
	if err != nil && !errors.Is(err, forge.ErrNotFound) {
		return err
	}
	p.branch = p.opts.Branch
	if p.branch == "" {
		if p.branch, err = p.fileBranch(); err != nil {
			return err
		}
	}
	if p.branch == "" && exists && !repo.Empty {
		p.branch = repo.DefaultBranch
	}
	if p.branch == "" && p.opts.Source != "" {
		if p.branch, err = p.sourceHead(ctx); err != nil {
			return err
		}
	}
	if p.branch == "" {
		p.branch = "main"
	}
	if !exists {
		// Without a source the repository starts with a README, so the
		// primary branch exists and can be protected.
		repo, err = p.createRepo(ctx, forge.NewRepo{
			Name: p.name, AutoInit: p.opts.Source == "", DefaultBranch: p.branch,
			Description: "Project repository managed by disinto",
		})
		if err != nil {
			return err
		}
		p.rep.add("repo", slug, StatusCreated, "branch "+p.branch)
		// An imported source is the project as its maintainers made it;
		// a repository started empty gets the factory's starting files.
		p.projectCreated = p.opts.Source == ""
	} else {
		p.rep.add("repo", slug, StatusPresent, "branch "+p.branch)
	}
	if _, err := rc.GetBranch(ctx, p.branch); err == nil {
		if p.opts.Source != "" {
			p.rep.add("source", p.opts.Source, StatusPresent, slug+" already has "+p.branch+"; nothing pushed")
		}
		return nil
	} else if !isNotFound(err) {
		return err
	}
	switch {
	case p.opts.Source != "" && repo.Empty:
		if err := p.pushSource(ctx, slug); err != nil {
			return err
		}
		// The forge indexes pushed branches asynchronously.
		if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			_, err := rc.GetBranch(ctx, p.branch)
			if isNotFound(err) {
				return false, nil
			}
			return err == nil, err
		}); err != nil {
			return fmt.Errorf("pushed branch %s of %s: %w", p.branch, slug, err)
		}
		p.rep.add("source", p.opts.Source, StatusCreated, "pushed to "+slug)
	case repo.Empty:
		readme := forge.NewFile{Path: "README.md", Content: []byte("# " + p.name + "\n")}
		if err := rc.CreateFiles(ctx, p.branch, "Initial commit", []forge.NewFile{readme}); err != nil {
			return err
		}
		p.rep.add("branch", slug+"@"+p.branch, StatusCreated, "initial commit")
	default:
		return fmt.Errorf("%s has no branch %q: pass the primary branch with --branch", slug, p.branch)
	}
	return nil
}

// waitFor polls done with a growing delay until it reports true, fails,
// or limit passes.
func waitFor(ctx context.Context, limit time.Duration, done func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	delay := 50 * time.Millisecond
	for {
		ok, err := done(ctx)
		if ok || err != nil {
			return err
		}
		if err := wait.For(ctx, delay); err != nil {
			return err
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// ensureOpsRepo creates <name>-ops next to the project repository and tops
// up its layout in one commit. It is created private: it holds the vault's
// actions and the logs of their runs, the journals and the sprints, which
// only its collaborators (the bots and the maintainers) read. An existing
// public one is left as the operator made it, and the report says so.
func (p *run) ensureOpsRepo(ctx context.Context) error {
	rc := p.admin.Repo(p.owner, p.opsName())
	slug := rc.Slug()
	repo, err := rc.Get(ctx)
	switch {
	case errors.Is(err, forge.ErrNotFound):
		repo, err = p.createRepo(ctx, forge.NewRepo{
			Name: p.opsName(), DefaultBranch: p.branch, Private: true,
			Description: "Operational data for " + p.owner + "/" + p.name,
		})
		if err != nil {
			return err
		}
		p.rep.add("repo", slug, StatusCreated, "ops repository, private")
	case err != nil:
		return err
	case repo.Private:
		p.rep.add("repo", slug, StatusPresent, "ops repository, private")
	default:
		p.rep.add("repo", slug, StatusPresent, "ops repository, PUBLIC: anyone reads its vault result logs and journals; make it private in the forge's settings")
	}
	branch := repo.DefaultBranch
	if branch == "" {
		branch = p.branch
	}
	var have []string
	if _, err := rc.GetBranch(ctx, branch); err == nil {
		if have, err = rc.ListTree(ctx, branch); err != nil {
			return err
		}
	} else if !isNotFound(err) {
		return err
	}
	missing := missingFiles(opsLayout(p.owner+"/"+p.name, p.login), have)
	if len(missing) == 0 {
		p.rep.add("ops layout", slug, StatusPresent, "")
		return nil
	}
	if err := rc.CreateFiles(ctx, branch, "chore: seed ops repo layout", missing); err != nil {
		return err
	}
	paths := make([]string, 0, len(missing))
	for _, f := range missing {
		paths = append(paths, f.Path)
	}
	st := StatusCreated
	if len(have) > 0 {
		st = StatusUpdated
	}
	p.rep.add("ops layout", slug, st, fmt.Sprintf("%d files", len(paths)))
	return nil
}

// ensureProfiles creates a private <bot>/.profile repository per bot (the
// agent's formula override, journal and lessons). The bot owns it, so its
// own pushes need no further grant; it is not protected.
func (p *run) ensureProfiles(ctx context.Context) error {
	var created []string
	for _, b := range p.bots {
		rc := p.admin.Repo(b.Login, ".profile")
		_, err := rc.Get(ctx)
		if err == nil {
			continue
		}
		if !isNotFound(err) {
			return err
		}
		if _, err := p.admin.CreateRepoFor(ctx, b.Login, forge.NewRepo{
			Name: ".profile", Private: true, AutoInit: true, DefaultBranch: "main",
			Description: b.Login + "'s journal, lessons and formula overrides",
		}); err != nil {
			return err
		}
		created = append(created, b.Login)
	}
	name := fmt.Sprintf("<bot>/.profile (%d bots)", len(p.bots))
	if len(created) == 0 {
		p.rep.add("repos", name, StatusPresent, "private")
		return nil
	}
	p.rep.add("repos", name, StatusCreated, "private; for "+strings.Join(created, " "))
	return nil
}

// ensureMergeSettings lets the project's pull requests be marked as merged
// by a commit already on the primary branch: the dev agent records so a
// merge the forge pushed but never recorded (a merge request cut short).
func (p *run) ensureMergeSettings(ctx context.Context) error {
	rc := p.admin.Repo(p.owner, p.name)
	changed, err := rc.EnsureManualMerge(ctx)
	if err != nil {
		return err
	}
	st := StatusPresent
	if changed {
		st = StatusUpdated
	}
	p.rep.add("merge settings", rc.Slug(), st, "pull requests may be marked merged by a commit on "+p.branch)
	return nil
}

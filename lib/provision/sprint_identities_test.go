package provision_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
)

// checkSprintIdentities holds the architect and the filer to their
// guardrails (spec 50 §1), enforced by the forge and not by prompts:
// architect-bot reads the project and writes the ops repository only;
// filer-bot writes the project's issues and nothing else, and reads the
// ops repository's pull requests and files.
func checkSprintIdentities(t *testing.T, srv *forgetest.Server, cfg *config.Config) {
	ctx := context.Background()
	p := cfg.Projects[0]
	owner, name := p.OwnerName()
	opsName := name + "-ops"
	arch, filer := mustBot(t, cfg, config.RoleArchitect), mustBot(t, cfg, config.RoleFiler)
	if arch.Fallback || filer.Fallback || arch.User != "architect-bot" || filer.User != "filer-bot" {
		t.Fatalf("identities: architect %+v, filer %+v", arch.User, filer.User)
	}
	archProj := srv.Client(t, arch.Token, arch.User).Repo(owner, name)
	archOps := srv.Client(t, arch.Token, arch.User).Repo(owner, opsName)
	filerProj := srv.Client(t, filer.Token, filer.User).Repo(owner, name)
	filerOps := srv.Client(t, filer.Token, filer.User).Repo(owner, opsName)

	// Neither pushes to the project, over git or through the API; the
	// dev bot, as a control, does.
	if err := tryPush(ctx, t, p.ForgeURL+"/"+p.Repo+".git", mustBot(t, cfg, config.RoleDev), "push-by-dev-bot"); err != nil {
		t.Fatalf("dev-bot cannot push a branch, so the check below proves nothing: %v", err)
	}
	for _, b := range []config.Bot{arch, filer} {
		if err := tryPush(ctx, t, p.ForgeURL+"/"+p.Repo+".git", b, "push-by-"+b.User); err == nil {
			t.Errorf("%s pushed a branch to the project", b.User)
		}
	}
	if _, err := archProj.CreateBranch(ctx, "architect-branch", p.PrimaryBranch); err == nil {
		t.Error("architect-bot created a branch on the project")
	}
	if _, err := filerProj.CreateBranch(ctx, "filer-branch", p.PrimaryBranch); err == nil {
		t.Error("filer-bot created a branch on the project")
	}
	// The architect proposes sprints on the ops repository: a branch, a
	// file, a pull request.
	if _, err := archOps.CreateBranch(ctx, "architect/sprint-vision-1", p.PrimaryBranch); err != nil {
		t.Fatalf("architect-bot: ops branch: %v", err)
	}
	if _, err := archOps.PutFile(ctx, forge.FileChange{Path: "sprints/s.md", Content: []byte("# Sprint: s\n"),
		Branch: "architect/sprint-vision-1", Message: "sprint: add s.md"}); err != nil {
		t.Fatalf("architect-bot: sprint file: %v", err)
	}
	pr, err := archOps.CreatePull(ctx, forge.NewPull{Title: "architect: s", Body: "pitch", Head: "architect/sprint-vision-1", Base: p.PrimaryBranch})
	if err != nil {
		t.Fatalf("architect-bot: sprint pull request: %v", err)
	}

	// The filer reads it and comments, but writes nothing there.
	if _, err := filerOps.ListPulls(ctx, forge.StateOpen); err != nil {
		t.Errorf("filer-bot: list ops pull requests: %v", err)
	}
	if _, err := filerOps.PullDiff(ctx, pr.Number); err != nil {
		t.Errorf("filer-bot: ops diff: %v", err)
	}
	if _, err := filerOps.GetFile(ctx, "sprints/s.md", pr.HeadSHA); err != nil {
		t.Errorf("filer-bot: sprint file at a commit: %v", err)
	}
	if _, err := filerOps.CreateComment(ctx, pr.Number, "filed"); err != nil {
		t.Errorf("filer-bot: comment on the sprint pull request: %v", err)
	}
	if _, err := filerOps.CreateBranch(ctx, "filer-ops-branch", p.PrimaryBranch); err == nil {
		t.Error("filer-bot created a branch on the ops repository")
	}
	if err := tryPush(ctx, t, p.ForgeURL+"/"+p.OpsRepo+".git", filer, "filer-ops-push"); err == nil {
		t.Error("filer-bot pushed to the ops repository")
	}

	// The filer files, labels and closes issues on the project.
	vision, err := srv.Admin(t).Repo(owner, name).CreateIssue(ctx, forge.NewIssue{Title: "a vision", Labels: []forge.LabelName{forge.LabelVision}})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := filerProj.CreateIssue(ctx, forge.NewIssue{Title: "sub-issue", Body: "x", Labels: []forge.LabelName{forge.LabelBacklog}})
	if err != nil || !sub.HasLabel(forge.LabelBacklog) || sub.Author != "filer-bot" {
		t.Errorf("filer-bot files a labelled issue: %+v %v", sub, err)
	}
	if err := filerProj.AddLabels(ctx, vision.Number, forge.LabelInProgress); err != nil {
		t.Errorf("filer-bot labels the vision: %v", err)
	}
	if err := filerProj.RemoveLabels(ctx, vision.Number, forge.LabelInProgress); err != nil {
		t.Errorf("filer-bot unlabels the vision: %v", err)
	}
	if err := filerProj.CloseIssue(ctx, vision.Number); err != nil {
		t.Errorf("filer-bot closes the vision: %v", err)
	}
	if got, err := srv.Admin(t).Repo(owner, name).GetIssue(ctx, vision.Number); err != nil || got.State != forge.StateClosed {
		t.Errorf("vision after the filer closed it: %+v %v", got, err)
	}
	// The architect cannot change the project's issues.
	if err := archProj.AddLabels(ctx, sub.Number, forge.LabelBlocked); err == nil {
		t.Error("architect-bot labelled a project issue")
	}
}

// tryPush clones url as b (its token as the password, as the daemon's git
// does) and pushes a new commit to branch.
func tryPush(ctx context.Context, t *testing.T, url string, b config.Bot, branch string) error {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: url, Username: b.User, Password: b.Token}})
	repo, err := g.EnsureClone(ctx, url, dir, "")
	if err != nil {
		t.Fatalf("%s clones %s: %v", b.User, url, err)
	}
	if err := repo.ConfigureIdentity(ctx, b.User, b.User+"@disinto.local"); err != nil {
		t.Fatal(err)
	}
	sha, err := repo.CommitFiles(ctx, "HEAD", "push attempt", []git.FileChange{{Path: "pushed.txt", Content: []byte(b.User + "\n")}})
	if err != nil {
		t.Fatal(err)
	}
	return repo.Push(ctx, dir, branch, git.PushOptions{Source: sha})
}

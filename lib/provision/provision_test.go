package provision_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/provision"
	"github.com/disinto/disinto/lib/vision"
)

const hookURL = "http://127.0.0.1:9/hooks/forgejo"

func options(srv *forgetest.Server, dir, repo string) provision.Options {
	return provision.Options{
		ForgeURL: srv.URL, AdminUser: srv.AdminLogin, AdminPassword: srv.AdminPassword,
		Repo: repo, ProjectsDir: filepath.Join(dir, "projects"), EnvFile: filepath.Join(dir, ".env"),
		WebhookURL: hookURL,
	}
}

func mustRun(t *testing.T, opts provision.Options) *provision.Report {
	t.Helper()
	rep, err := provision.Run(context.Background(), opts)
	if err != nil {
		var b bytes.Buffer
		_ = rep.WriteTable(&b)
		t.Fatalf("provision: %v\n%s", err, b.String())
	}
	return rep
}

func changes(rep *provision.Report) []string {
	var out []string
	for _, it := range rep.Items {
		if it.Status != provision.StatusPresent {
			out = append(out, it.Kind+" "+it.Name+": "+string(it.Status)+" "+it.Detail)
		}
	}
	return out
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	vals, err := config.ReadEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// verify checks the forge and the files against the specification and
// returns the loaded configuration.
func verify(t *testing.T, srv *forgetest.Server, opts provision.Options) *config.Config {
	t.Helper()
	ctx := context.Background()
	st, err := os.Stat(opts.EnvFile)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("env file mode %v, want 0600", st.Mode().Perm())
	}
	cfg, err := config.Load(opts.ProjectsDir, opts.EnvFile, nil)
	if err != nil {
		t.Fatalf("config check of the written files: %v", err)
	}
	p := cfg.Projects[0]
	owner, name := p.OwnerName()
	if p.Repo != opts.Repo || p.OpsRepo != opts.Repo+"-ops" || p.ForgeURL != srv.URL || p.CI.System != config.CINone {
		t.Errorf("project %+v", p)
	}
	if cfg.WebhookSecret == "" {
		t.Error("no DISINTO_WEBHOOK_SECRET")
	}
	if v := readEnv(t, opts.EnvFile)["FORGE_ADMIN_PASS"]; v != "" {
		t.Error("the admin password was stored in the agents' env file")
	}
	for _, role := range config.AllRoles() {
		bot, err := cfg.Bot(role)
		if err != nil || bot.Fallback {
			t.Fatalf("%s: %v %+v", role, err, bot)
		}
		if me, err := srv.Client(t, bot.Token, bot.User).Me(ctx); err != nil || me.Login != bot.User {
			t.Errorf("%s token: %v %v", bot.User, me.Login, err)
		}
		pc, _ := forge.New(forge.Options{URL: srv.URL, User: bot.User, Password: bot.Password})
		if me, err := pc.Me(ctx); err != nil || me.Login != bot.User {
			t.Errorf("%s password: %v %v", bot.User, me.Login, err)
		}
		if _, err := srv.Admin(t).Repo(bot.User, ".profile").Get(ctx); err != nil {
			t.Errorf("%s/.profile: %v", bot.User, err)
		}
	}
	admin := srv.Admin(t)
	for _, repo := range []string{name, name + "-ops"} {
		ls, err := admin.Repo(owner, repo).ListLabels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		have := map[forge.LabelName]string{}
		for _, l := range ls {
			have[l.Name] = l.Color
		}
		for _, def := range forge.Registry() {
			if have[def.Name] != def.Color {
				t.Errorf("%s label %s: colour %q, want %q", repo, def.Name, have[def.Name], def.Color)
			}
		}
	}
	tree, err := admin.Repo(owner, name+"-ops").ListTree(ctx, p.PrimaryBranch)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(tree)
	for _, want := range []string{"README.md", "vault/actions/.gitkeep", "vault/policy.toml", "knowledge/.gitkeep",
		"evidence/red-team/.gitkeep", "sprints/.gitkeep", "journal/supervisor/.gitkeep", "prerequisites.md"} {
		if i := sort.SearchStrings(tree, want); i == len(tree) || tree[i] != want {
			t.Errorf("ops repo lacks %s (has %v)", want, tree)
		}
	}
	perms := []struct {
		repo, user string
		want       forge.Permission
	}{
		{name, "dev-bot", forge.PermWrite}, {name, "review-bot", forge.PermWrite}, {name, "architect-bot", forge.PermRead},
		{name, "filer-bot", forge.PermWrite}, {name + "-ops", "planner-bot", forge.PermWrite}, {name + "-ops", "review-bot", forge.PermRead},
		{name + "-ops", "architect-bot", forge.PermWrite}, {name + "-ops", "filer-bot", forge.PermRead},
	}
	for _, pc := range perms {
		got, err := admin.Repo(owner, pc.repo).CollaboratorPermission(ctx, pc.user)
		if err != nil || got != pc.want {
			t.Errorf("%s on %s: %q %v, want %q", pc.user, pc.repo, got, err, pc.want)
		}
	}
	hooks, err := admin.Repo(owner, name).ListWebhooks(ctx)
	if err != nil || len(hooks) != 1 || hooks[0].URL != hookURL || !hooks[0].Active {
		t.Errorf("webhooks %+v %v", hooks, err)
	}
	// The ops repository's events wake the vault dispatcher.
	if hooks, err := admin.Repo(owner, name+"-ops").ListWebhooks(ctx); err != nil || len(hooks) != 1 || hooks[0].URL != hookURL {
		t.Errorf("ops webhooks %+v %v", hooks, err)
	}
	if pr, err := admin.Repo(owner, name+"-ops").GetBranchProtection(ctx, p.PrimaryBranch); err != nil ||
		!slices.Contains(pr.PushWhitelist, "vault-bot") || !slices.Contains(pr.PushWhitelist, "planner-bot") ||
		slices.Contains(pr.PushWhitelist, "dev-bot") {
		t.Errorf("ops protection %+v %v", pr, err)
	}
	pr, err := admin.Repo(owner, name).GetBranchProtection(ctx, p.PrimaryBranch)
	if err != nil || pr.RequiredApprovals != 1 || len(pr.PushWhitelist) != 0 ||
		strings.Join(pr.ApprovalsWhitelist, ",") != "review-bot" || len(pr.MergeWhitelist) == 0 || pr.MergeWhitelist[0] != "dev-bot" {
		t.Errorf("project protection %+v %v", pr, err)
	}
	return cfg
}

func TestFreshForgeThenRerunThenRepair(t *testing.T) {
	t.Parallel()
	srv := forgetest.Start(t)
	dir := t.TempDir()
	opts := options(srv, dir, "acme/widget")
	rep := mustRun(t, opts)
	if it, ok := rep.Find("bot", "dev-bot"); !ok || it.Status != provision.StatusCreated {
		t.Errorf("dev-bot: %+v", it)
	}
	cfg := verify(t, srv, opts)
	before, _ := os.ReadFile(opts.EnvFile)
	// A project started empty gets the vision template, which the
	// planner takes for no vision, and the issue forms.
	if it, ok := rep.Find("project files", "acme/widget@main"); !ok || it.Status != provision.StatusCreated {
		t.Errorf("project files: %+v", it)
	}
	project := srv.Admin(t).Repo("acme", "widget")
	if f, err := project.GetFile(context.Background(), vision.Path, "main"); err != nil || !vision.IsTemplate(string(f.Content)) {
		t.Errorf("VISION.md on main: %v, template %t", err, err == nil && vision.IsTemplate(string(f.Content)))
	}
	for path := range vision.IssueTemplates() {
		if _, err := project.GetFile(context.Background(), path, "main"); err != nil {
			t.Errorf("issue form %s: %v", path, err)
		}
	}

	rep = mustRun(t, opts)
	if c := changes(rep); len(c) > 0 {
		t.Errorf("re-run changed: %v", c)
	}
	if after, _ := os.ReadFile(opts.EnvFile); !bytes.Equal(before, after) {
		t.Error("re-run rewrote the env file")
	}

	t.Run("protection", func(t *testing.T) { checkProtection(t, srv, cfg) })

	t.Run("scopes suffice", func(t *testing.T) { checkScopes(t, srv, cfg) })

	t.Run("sprint identities", func(t *testing.T) { checkSprintIdentities(t, srv, cfg) })

	t.Run("lost token and password", func(t *testing.T) {
		env := readEnv(t, opts.EnvFile)
		oldReview := env["FORGE_REVIEW_TOKEN"]
		e, err := provision.OpenEnvFile(opts.EnvFile)
		if err != nil {
			t.Fatal(err)
		}
		e.Set("FORGE_REVIEW_TOKEN", "")
		e.Set("FORGE_GARDENER_PASS", "")
		e.Set("FORGE_PLANNER_TOKEN", "0123456789abcdef0123456789abcdef01234567")
		if err := e.Save(); err != nil {
			t.Fatal(err)
		}
		rep := mustRun(t, opts)
		got := changes(rep)
		if len(got) != 3 || !strings.Contains(got[0], "review-bot: updated new token") ||
			!strings.Contains(got[1], "gardener-bot: updated password reset") ||
			!strings.Contains(got[2], "planner-bot: updated new token") {
			t.Errorf("changes %q", got)
		}
		if _, err := srv.Client(t, oldReview, "review-bot").Me(context.Background()); !errors.Is(err, forge.ErrUnauthorized) {
			t.Errorf("the stale review token still works: %v", err)
		}
		verify(t, srv, opts)
	})

	t.Run("label drift", func(t *testing.T) {
		rc := srv.Admin(t).Repo("acme", "widget")
		ls, err := rc.ListLabels(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if l.Name == forge.LabelBacklog {
				if err := rc.EditLabel(context.Background(), l.ID, "#000000", "changed"); err != nil {
					t.Fatal(err)
				}
			}
		}
		got := changes(mustRun(t, opts))
		if len(got) != 1 || !strings.Contains(got[0], "labels acme/widget: updated colour or description reset: backlog") {
			t.Errorf("changes %q", got)
		}
		verify(t, srv, opts)
	})

	t.Run("rotate", func(t *testing.T) {
		old := readEnv(t, opts.EnvFile)
		// Anyone who read the review bot's password could have minted a
		// token of their own.
		minted := mintToken(t, srv, "review-bot", old["FORGE_REVIEW_PASS"])
		ropts := opts
		ropts.RotateTokens = true
		mustRun(t, ropts)
		now := readEnv(t, opts.EnvFile)
		onlyIssuedToken(t, srv, "review-bot", now["FORGE_REVIEW_PASS"], "disinto-review", minted)
		for k, v := range old {
			if config.IsSecretName(k) && k != "FORGE_ADMIN_PASS" && now[k] == v {
				t.Errorf("%s not rotated", k)
			}
		}
		if _, err := srv.Client(t, old["FORGE_TOKEN"], "dev-bot").Me(context.Background()); !errors.Is(err, forge.ErrUnauthorized) {
			t.Errorf("old dev token still works: %v", err)
		}
		verify(t, srv, opts)
		if c := changes(mustRun(t, opts)); len(c) > 0 {
			t.Errorf("run after rotation changed: %v", c)
		}
	})
}

// checkProtection: dev-bot cannot push to the primary branch nor merge an
// unapproved pull request; after review-bot approves, dev-bot can merge
// and planner-bot could not. On the ops repo, bots cannot merge at all.
func checkProtection(t *testing.T, srv *forgetest.Server, cfg *config.Config) {
	ctx := context.Background()
	p := cfg.Projects[0]
	owner, name := p.OwnerName()
	bot := func(r config.Role) *forge.RepoClient {
		b, err := cfg.Bot(r)
		if err != nil {
			t.Fatal(err)
		}
		return srv.Client(t, b.Token, b.User).Repo(owner, name)
	}
	dev, review, planner := bot(config.RoleDev), bot(config.RoleReview), bot(config.RolePlanner)
	if _, err := dev.PutFile(ctx, forge.FileChange{Path: "direct.txt", Content: []byte("x"), Branch: p.PrimaryBranch, Message: "direct"}); err == nil {
		t.Error("dev-bot pushed to the protected primary branch")
	}
	if _, err := dev.CreateBranch(ctx, "feature", p.PrimaryBranch); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.PutFile(ctx, forge.FileChange{Path: "feature.txt", Content: []byte("x"), Branch: "feature", Message: "feature"}); err != nil {
		t.Fatal(err)
	}
	pr, err := dev.CreatePull(ctx, forge.NewPull{Title: "feature", Head: "feature", Base: p.PrimaryBranch})
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: pr.HeadSHA}); !errors.Is(err, forge.ErrMergeBlocked) {
		t.Fatalf("merge without approval: %v, want ErrMergeBlocked", err)
	}
	if _, err := review.CreateReview(ctx, pr.Number, forge.NewReview{Event: forge.ReviewApprove, Body: "ok", CommitID: pr.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	if err := planner.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: pr.HeadSHA}); !errors.Is(err, forge.ErrMergeBlocked) {
		t.Errorf("planner-bot merge: %v, want ErrMergeBlocked", err)
	}
	if err := dev.Merge(ctx, pr.Number, forge.MergeOptions{HeadSHA: pr.HeadSHA}); err != nil {
		t.Fatalf("dev-bot merge after approval: %v", err)
	}

	// Ops: no bot pushes; a vault pull request approved by review-bot
	// still cannot be merged by dev-bot; the administrator approves and
	// merges.
	opsDev := srv.Client(t, mustBot(t, cfg, config.RoleDev).Token, "dev-bot").Repo(owner, name+"-ops")
	opsReview := srv.Client(t, mustBot(t, cfg, config.RoleReview).Token, "review-bot").Repo(owner, name+"-ops")
	opsAdmin := srv.Admin(t).Repo(owner, name+"-ops")
	if _, err := opsDev.PutFile(ctx, forge.FileChange{Path: "vault/actions/x.toml", Content: []byte("x"), Branch: p.PrimaryBranch, Message: "direct"}); err == nil {
		t.Error("dev-bot pushed to the protected ops branch")
	}
	if _, err := opsDev.CreateBranch(ctx, "vault-x", p.PrimaryBranch); err != nil {
		t.Fatal(err)
	}
	if _, err := opsDev.PutFile(ctx, forge.FileChange{Path: "vault/actions/x.toml", Content: []byte("id = \"x\"\n"), Branch: "vault-x", Message: "vault: x"}); err != nil {
		t.Fatal(err)
	}
	vpr, err := opsDev.CreatePull(ctx, forge.NewPull{Title: "vault: x", Head: "vault-x", Base: p.PrimaryBranch})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := opsReview.CreateReview(ctx, vpr.Number, forge.NewReview{Event: forge.ReviewApprove, Body: "ok", CommitID: vpr.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	if err := opsDev.Merge(ctx, vpr.Number, forge.MergeOptions{HeadSHA: vpr.HeadSHA}); !errors.Is(err, forge.ErrMergeBlocked) {
		t.Errorf("dev-bot merged a vault pull request: %v", err)
	}
	if _, err := opsAdmin.CreateReview(ctx, vpr.Number, forge.NewReview{Event: forge.ReviewApprove, Body: "approved", CommitID: vpr.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	if err := opsAdmin.Merge(ctx, vpr.Number, forge.MergeOptions{HeadSHA: vpr.HeadSHA}); err != nil {
		t.Errorf("admin merge of an approved vault pull request: %v", err)
	}
}

// checkScopes does with each bot's token what its role does on the
// project: every bot reads the repository and its issues and comments;
// the labelling roles file or relabel issues; the dev bot claims.
func checkScopes(t *testing.T, srv *forgetest.Server, cfg *config.Config) {
	ctx := context.Background()
	owner, name := cfg.Projects[0].OwnerName()
	issue, err := srv.Admin(t).Repo(owner, name).CreateIssue(ctx, forge.NewIssue{Title: "scopes", Labels: []forge.LabelName{forge.LabelBacklog}})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[config.Role]forge.LabelName{
		config.RoleDev: forge.LabelInProgress, config.RoleGardener: forge.LabelTechDebt, config.RolePlanner: forge.LabelPriority,
		config.RolePredictor: forge.LabelPredictionUnreviewed, config.RoleFiler: forge.LabelVision, config.RoleReview: forge.LabelTechDebt,
	}
	for _, role := range config.AllRoles() {
		b := mustBot(t, cfg, role)
		rc := srv.Client(t, b.Token, b.User).Repo(owner, name)
		if _, err := rc.Get(ctx); err != nil {
			t.Errorf("%s: read repo: %v", b.User, err)
		}
		if _, err := rc.ListIssues(ctx, forge.IssueQuery{}); err != nil {
			t.Errorf("%s: list issues: %v", b.User, err)
		}
		if _, err := rc.CreateComment(ctx, issue.Number, "comment by "+b.User); err != nil {
			t.Errorf("%s: comment: %v", b.User, err)
		}
		if l, ok := labels[role]; ok {
			if err := rc.AddLabels(ctx, issue.Number, l); err != nil {
				t.Errorf("%s: add label %s: %v", b.User, l, err)
			}
		}
	}
	filer := mustBot(t, cfg, config.RoleFiler)
	filed, err := srv.Client(t, filer.Token, filer.User).Repo(owner, name).CreateIssue(ctx, forge.NewIssue{Title: "filed", Labels: []forge.LabelName{forge.LabelBacklog}})
	if err != nil || !filed.HasLabel(forge.LabelBacklog) {
		t.Errorf("filer-bot files a labelled issue: %+v %v", filed, err)
	}
	got, err := srv.Admin(t).Repo(owner, name).GetIssue(ctx, issue.Number)
	if err != nil {
		t.Fatal(err)
	}
	for role, l := range labels {
		if !got.HasLabel(l) {
			t.Errorf("label %s of %s missing: %v", l, role, got.Labels)
		}
	}
}

func mustBot(t *testing.T, cfg *config.Config, r config.Role) config.Bot {
	t.Helper()
	b, err := cfg.Bot(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cutTransport cancels the run right after the n-th request got its
// response: the forge did the work, the run never learns the result.
type cutTransport struct {
	n      int64
	count  atomic.Int64
	cancel context.CancelFunc
}

func (c *cutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if c.count.Add(1) == c.n {
		c.cancel()
		if resp != nil {
			_ = resp.Body.Close()
		}
		return nil, context.Canceled
	}
	return resp, err
}

func TestInterruptedRunsComplete(t *testing.T) {
	t.Parallel()
	srv := forgetest.Start(t)
	dir := t.TempDir()
	opts := options(srv, dir, "acme/gadget")
	interrupted := 0
	for n := int64(3); ; n += 7 {
		ctx, cancel := context.WithCancel(context.Background())
		ct := &cutTransport{n: n, cancel: cancel}
		o := opts
		o.HTTPClient = &http.Client{Transport: ct}
		_, err := provision.Run(ctx, o)
		cut := ctx.Err() != nil
		cancel()
		if err == nil {
			if cut {
				t.Errorf("run cut at request %d reported success", n)
			}
			break
		}
		if !cut {
			t.Fatalf("run cut at request %d failed on its own: %v", n, err)
		}
		interrupted++
		if n > 2000 {
			t.Fatal("never completes")
		}
	}
	t.Logf("%d interrupted runs before one completed", interrupted)
	if interrupted < 5 {
		t.Errorf("only %d interrupted runs", interrupted)
	}
	if c := changes(mustRun(t, opts)); len(c) > 0 {
		t.Errorf("run after completion changed: %v", c)
	}
	verify(t, srv, opts)
}

// TestLocalModelBotAdminTokenAndSource: a project file declaring a
// local-model agent gets its bot (FORGE_TOKEN_<NAME>) with merge rights;
// an admin token alone suffices, also to push the source.
func TestLocalModelBotAdminTokenAndSource(t *testing.T) {
	t.Parallel()
	srv := forgetest.Start(t)
	dir := t.TempDir()
	opts := options(srv, dir, "acme/gizmo")
	opts.AdminUser, opts.AdminPassword, opts.AdminToken = "", "", srv.AdminToken
	opts.Source = sourceRepo(t)
	toml := "name = \"gizmo\"\nrepo = \"acme/gizmo\"\nops_repo = \"acme/gizmo-ops\"\nforge_url = \"" + srv.URL + "\"\nprimary_branch = \"trunk\"\n" +
		"\n[agents.llama]\nbase_url = \"http://127.0.0.1:8081\"\nmodel = \"qwen\"\nroles = [\"dev\"]\nforge_user = \"dev-qwen\"\n"
	if err := os.MkdirAll(opts.ProjectsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(opts.ProjectsDir, "gizmo.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := mustRun(t, opts)
	if it, ok := rep.Find("bot", "dev-qwen"); !ok || it.Status != provision.StatusCreated || !strings.Contains(it.Detail, "FORGE_TOKEN_LLAMA") {
		t.Errorf("dev-qwen: %+v", it)
	}
	if it, ok := rep.Find("project file", filepath.Join(opts.ProjectsDir, "gizmo.toml")); !ok || it.Status != provision.StatusPresent {
		t.Errorf("project file: %+v", it)
	}
	cfg := verify(t, srv, opts)
	lb, err := cfg.LocalBot(cfg.Projects[0].Agents["llama"])
	if err != nil {
		t.Fatal(err)
	}
	if me, err := srv.Client(t, lb.Token, lb.User).Me(context.Background()); err != nil || me.Login != "dev-qwen" {
		t.Errorf("dev-qwen token: %v %v", me, err)
	}
	pr, err := srv.Admin(t).Repo("acme", "gizmo").GetBranchProtection(context.Background(), "trunk")
	if err != nil || strings.Join(pr.MergeWhitelist, ",") != "dev-bot,dev-qwen" {
		t.Errorf("merge whitelist %+v %v", pr, err)
	}
	if c := changes(mustRun(t, opts)); len(c) > 0 {
		t.Errorf("re-run changed: %v", c)
	}
}

// sourceRepo makes a repository with one commit on branch trunk.
func sourceRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "trunk"},
		{"-c", "user.name=t", "-c", "user.email=t@example.test", "commit", "-q", "--allow-empty", "-m", "first"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

// TestOwnerIsTheAdmin: repositories in the admin's own namespace, no
// webhook URL.
func TestOwnerIsTheAdmin(t *testing.T) {
	t.Parallel()
	srv := forgetest.Start(t)
	dir := t.TempDir()
	opts := options(srv, dir, srv.AdminLogin+"/solo")
	opts.WebhookURL = ""
	rep := mustRun(t, opts)
	if it, ok := rep.Find("owner", srv.AdminLogin); !ok || it.Status != provision.StatusPresent {
		t.Errorf("owner: %+v", it)
	}
	if _, ok := rep.Find("webhook", srv.AdminLogin+"/solo -> "); ok {
		t.Error("webhook registered without a URL")
	}
	cfg, err := config.Load(opts.ProjectsDir, opts.EnvFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Projects[0]; p.OpsRepo != srv.AdminLogin+"/solo-ops" || p.PrimaryBranch != "main" {
		t.Errorf("project %+v", p)
	}
	if c := changes(mustRun(t, opts)); len(c) > 0 {
		t.Errorf("re-run changed: %v", c)
	}
}

package release_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/release"
	"github.com/disinto/disinto/lib/runner"
	"github.com/disinto/disinto/lib/runner/runnertest"
)

// The job tests run the release job (the image's disinto runner-job
// release) in the runner image on a real Docker engine, against a real
// Gitea reached over the engine's bridge.
const (
	engineHint = runnertest.SetupHint
	jobImage   = "release-test/runner:test"
)

// gitea is the package's Gitea, shared by its tests.
var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// rig is one forge repository, a mirror repository and a runner.
type rig struct {
	t        *testing.T
	srv      *forgetest.Server
	forgeURL string // as containers on the bridge reach it
	owner    forgetest.User
	repo     *forge.RepoClient
	mirror   *forge.RepoClient
	mirrorBy forgetest.User
	r        *runner.Launcher
}

func newRig(t *testing.T) *rig {
	t.Helper()
	if testing.Short() {
		t.Skip("release job test: needs the Docker engine and Gitea")
	}
	cli := runnertest.Engine(t)
	img := buildOnce(t, cli)
	srv := gitea.Get(t)
	g := &rig{t: t, srv: srv, forgeURL: runnertest.ServeOnBridge(t, cli, reverseProxy(t, srv.URL))}
	g.owner = srv.NewUser(t, "owner")
	g.repo = srv.NewRepo(t, g.owner, "widgets")
	g.mirrorBy = srv.NewUser(t, "mirror")
	g.mirror = srv.NewRepo(t, g.mirrorBy, "widgets-mirror")
	r, err := runner.New(runner.Options{Engine: cli, Image: img, Labels: map[string]string{"org.disinto.test.release": g.owner.Login}})
	if err != nil {
		t.Fatal(err)
	}
	g.r = r
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if n, err := r.Reap(ctx); err != nil || n != 0 {
			t.Errorf("containers left behind: %d (%v)", n, err)
		}
	})
	return g
}

// head is the repository's main head.
func (g *rig) head() string {
	g.t.Helper()
	b, err := g.repo.GetBranch(g.t.Context(), "main")
	if err != nil {
		g.t.Fatal(err)
	}
	return b.SHA
}

// run plans and runs the release of version at sha, the mirror's token
// declared when withMirror, and returns its checked result.
func (g *rig) run(version, sha string, withMirror bool) (release.Result, runner.Outcome) {
	g.t.Helper()
	var mirrors []string
	secrets := map[string]string{release.TokenSecret: g.owner.Token}
	if withMirror {
		mirrors = []string{"backup"}
		secrets[release.MirrorSecret("backup")] = g.mirrorBy.Token
	}
	a, err := release.Request{Project: "widgets", Version: version, SHA: sha, Mirrors: mirrors}.Action()
	if err != nil {
		g.t.Fatal(err)
	}
	plan, err := release.Plan(a, release.Target{ForgeURL: g.forgeURL, Repo: g.repo.Slug(),
		Mirrors: map[string]string{"backup": g.forgeURL + "/" + g.mirror.Slug() + ".git"}})
	if err != nil {
		g.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := g.r.Run(ctx, runner.Job{ID: a.ID, Kind: runner.Mechanical, Script: plan.Script, Env: plan.Env,
		Secrets: secrets, Network: "bridge"})
	if err != nil {
		g.t.Fatalf("run: %v\n%s", err, out.Log)
	}
	res, err := release.ParseResult(out.Log, plan)
	if err != nil {
		g.t.Fatalf("result: %v\n%s", err, out.Log)
	}
	for _, v := range secrets {
		if strings.Contains(out.Log, v) {
			g.t.Errorf("the log shows a token:\n%s", out.Log)
		}
	}
	return res, out
}

// tagOf is the commit tag points at in repo ("" when there is none).
func tagOf(t *testing.T, repo *forge.RepoClient, tag string) string {
	t.Helper()
	got, err := repo.GetTag(t.Context(), tag)
	if errors.Is(err, forge.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return got.SHA
}

// A release tags the commit and pushes the tag to the mirror; run again
// (an interrupted release resumed) it finds the tag in place and
// completes the same way, moving nothing.
func TestJobTagsAndResumes(t *testing.T) {
	g := newRig(t)
	sha := g.head()
	res, out := g.run("v1.0.0", sha, true)
	if res.Status != release.StatusReleased || res.Tag != release.TagCreated || res.Mirrors["backup"] != release.MirrorOK || out.ExitCode != 0 {
		t.Fatalf("first run: %+v exit %d\n%s", res, out.ExitCode, out.Log)
	}
	if tagOf(t, g.repo, "v1.0.0") != sha || tagOf(t, g.mirror, "v1.0.0") != sha {
		t.Fatalf("tags: forge %s, mirror %s; want %s", tagOf(t, g.repo, "v1.0.0"), tagOf(t, g.mirror, "v1.0.0"), sha)
	}
	res, out = g.run("v1.0.0", sha, true)
	if res.Status != release.StatusReleased || res.Tag != release.TagExisting || res.Mirrors["backup"] != release.MirrorOK || out.ExitCode != 0 {
		t.Fatalf("second run: %+v exit %d\n%s", res, out.ExitCode, out.Log)
	}
}

// A tag of the version on another commit fails the release and stays
// where it was; a mirror without its token is skipped.
func TestJobNeverMovesATag(t *testing.T) {
	g := newRig(t)
	first := g.head()
	res, _ := g.run("v1.0.0", first, false)
	if res.Status != release.StatusReleased || res.Mirrors["backup"] != release.MirrorSkipped {
		t.Fatalf("release without the mirror's token: %+v", res)
	}
	if tagOf(t, g.mirror, "v1.0.0") != "" {
		t.Fatal("the mirror got the tag without its token")
	}
	if _, err := g.repo.PutFile(t.Context(), forge.FileChange{Path: "NEWS.md", Content: []byte("more\n"), Message: "more"}); err != nil {
		t.Fatal(err)
	}
	second := g.head()
	res, out := g.run("v1.0.0", second, true)
	if res.Status != release.StatusFailed || out.ExitCode == 0 || !strings.Contains(res.Reason, "never moved") {
		t.Fatalf("release over a tag elsewhere: %+v exit %d\n%s", res, out.ExitCode, out.Log)
	}
	if got := tagOf(t, g.repo, "v1.0.0"); got != first {
		t.Fatalf("the tag moved to %s", got)
	}
}

// A mirror that has the version's tag on another commit refuses the
// push: the release is partial, the forge's tag stands.
func TestJobMirrorRefusalIsPartial(t *testing.T) {
	g := newRig(t)
	mb, err := g.mirror.GetBranch(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	createTag(t, g.srv.URL, g.mirrorBy, g.mirror.Slug(), "v3.0.0", mb.SHA)
	sha := g.head()
	res, out := g.run("v3.0.0", sha, true)
	if res.Status != release.StatusPartial || !strings.HasPrefix(res.Mirrors["backup"], "failed: ") || out.ExitCode != 0 {
		t.Fatalf("release: %+v exit %d\n%s", res, out.ExitCode, out.Log)
	}
	if tagOf(t, g.repo, "v3.0.0") != sha || tagOf(t, g.mirror, "v3.0.0") != mb.SHA {
		t.Fatal("a tag is not where it should be")
	}
}

// createTag tags sha in the repository at cloneURL with git, as its owner
// u would by hand.
func createTag(t *testing.T, srvURL string, u forgetest.User, slug, name, sha string) {
	t.Helper()
	cu, err := url.Parse(srvURL)
	if err != nil {
		t.Fatal(err)
	}
	cu.User, cu.Path = url.UserPassword(u.Login, u.Password), "/"+slug+".git"
	dir := filepath.Join(t.TempDir(), "clone")
	for _, args := range [][]string{
		{"clone", "-q", cu.String(), dir},
		{"-C", dir, "tag", name, sha},
		{"-C", dir, "push", "-q", "origin", "refs/tags/" + name},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", args[0], err, out)
		}
	}
}

var (
	imageOnce sync.Once
	imageErr  error
)

// buildOnce builds the runner image as jobImage once per test binary.
func buildOnce(t *testing.T, cli *client.Client) string {
	t.Helper()
	imageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		imageErr = runnertest.Build(ctx, cli, filepath.Join("..", ".."), jobImage)
	})
	if imageErr != nil {
		t.Fatalf("build %s: %v (%s)", jobImage, imageErr, engineHint)
	}
	return jobImage
}

// reverseProxy forwards every request to target.
func reverseProxy(t *testing.T, target string) http.Handler {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	return httputil.NewSingleHostReverseProxy(u)
}

package release_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/release"
)

// The Execute tests run the release job in this process, as the runner
// image's disinto does, against the package's real Gitea: the job's logic
// without the engine.

// hostRig is a forge repository and a mirror repository on the Gitea.
type hostRig struct {
	t        *testing.T
	srv      *forgetest.Server
	owner    forgetest.User
	repo     *forge.RepoClient
	mirrorBy forgetest.User
	mirror   *forge.RepoClient
}

func newHostRig(t *testing.T) *hostRig {
	t.Helper()
	if testing.Short() {
		t.Skip("release job test: needs Gitea")
	}
	srv := gitea.Get(t)
	g := &hostRig{t: t, srv: srv}
	g.owner = srv.NewUser(t, "owner")
	g.repo = srv.NewRepo(t, g.owner, "widgets")
	g.mirrorBy = srv.NewUser(t, "mirror")
	g.mirror = srv.NewRepo(t, g.mirrorBy, "widgets-mirror")
	return g
}

// head is the repository's main head.
func (g *hostRig) head() string {
	g.t.Helper()
	b, err := g.repo.GetBranch(g.t.Context(), "main")
	if err != nil {
		g.t.Fatal(err)
	}
	return b.SHA
}

// execute plans the release of version at sha with the secret files
// secrets (name → value; the mirror's token declared when it has one),
// runs it with Execute and returns the result it printed, checked by
// ParseResult, and its output.
func (g *hostRig) execute(version, sha string, secrets map[string]string) (release.Result, string) {
	g.t.Helper()
	var mirrors []string
	if _, ok := secrets[release.MirrorSecret("backup")]; ok {
		mirrors = []string{"backup"}
	}
	a, err := release.Request{Project: "widgets", Version: version, SHA: sha, Mirrors: mirrors}.Action()
	if err != nil {
		g.t.Fatal(err)
	}
	plan, err := release.Plan(a, release.Target{ForgeURL: g.srv.URL, Repo: g.repo.Slug(),
		Mirrors: map[string]string{"backup": g.srv.URL + "/" + g.mirror.Slug() + ".git"}})
	if err != nil {
		g.t.Fatal(err)
	}
	dir := g.t.TempDir()
	for name, v := range secrets {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o400); err != nil {
			g.t.Fatal(err)
		}
	}
	in, err := release.ReadInputs(func(k string) string { return plan.Env[k] }, dir)
	if err != nil {
		g.t.Fatal(err)
	}
	var out bytes.Buffer
	scratch := g.t.TempDir()
	got := release.Execute(g.t.Context(), in, release.ExecOptions{Out: &out, TempDir: scratch})
	res, err := release.ParseResult(out.String(), plan)
	if err != nil {
		g.t.Fatalf("result: %v\n%s", err, out.String())
	}
	if res.JSON() != got.JSON() {
		g.t.Errorf("Execute returned %s, printed %s", got.JSON(), res.JSON())
	}
	for _, v := range secrets {
		if strings.Contains(out.String(), v) {
			g.t.Errorf("the output shows a token:\n%s", out.String())
		}
	}
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		g.t.Errorf("the job left %d scratch entries behind", len(left))
	}
	return res, out.String()
}

// tokens are the secrets of a release by g's owner, with the mirror's
// token when withMirror.
func (g *hostRig) tokens(withMirror bool) map[string]string {
	s := map[string]string{release.TokenSecret: g.owner.Token}
	if withMirror {
		s[release.MirrorSecret("backup")] = g.mirrorBy.Token
	}
	return s
}

// The job tags the commit and pushes the tag to the mirror; run again it
// finds the tag in place and completes the same way.
func TestExecuteTagsAndResumes(t *testing.T) {
	g := newHostRig(t)
	sha := g.head()
	res, out := g.execute("v1.0.0", sha, g.tokens(true))
	if res.Status != release.StatusReleased || res.Tag != release.TagCreated || res.Mirrors["backup"] != release.MirrorOK {
		t.Fatalf("first run: %+v\n%s", res, out)
	}
	if tagOf(t, g.repo, "v1.0.0") != sha || tagOf(t, g.mirror, "v1.0.0") != sha {
		t.Fatalf("tags: forge %s, mirror %s; want %s", tagOf(t, g.repo, "v1.0.0"), tagOf(t, g.mirror, "v1.0.0"), sha)
	}
	res, out = g.execute("v1.0.0", sha, g.tokens(true))
	if res.Status != release.StatusReleased || res.Tag != release.TagExisting || res.Mirrors["backup"] != release.MirrorOK {
		t.Fatalf("second run: %+v\n%s", res, out)
	}
}

// A tag of the version on another commit fails the release and stays; a
// mirror without a declared token is skipped.
func TestExecuteNeverMovesATag(t *testing.T) {
	g := newHostRig(t)
	first := g.head()
	res, out := g.execute("v1.0.0", first, g.tokens(false))
	if res.Status != release.StatusReleased || res.Mirrors["backup"] != release.MirrorSkipped {
		t.Fatalf("release without the mirror's token: %+v\n%s", res, out)
	}
	if tagOf(t, g.mirror, "v1.0.0") != "" {
		t.Fatal("the mirror got the tag without its token")
	}
	if _, err := g.repo.PutFile(t.Context(), forge.FileChange{Path: "NEWS.md", Content: []byte("more\n"), Message: "more"}); err != nil {
		t.Fatal(err)
	}
	second := g.head()
	res, out = g.execute("v1.0.0", second, g.tokens(true))
	if res.Status != release.StatusFailed || !strings.Contains(res.Reason, "never moved") || !strings.Contains(res.Reason, first) {
		t.Fatalf("release over a tag elsewhere: %+v\n%s", res, out)
	}
	if got := tagOf(t, g.repo, "v1.0.0"); got != first {
		t.Fatalf("the tag moved to %s", got)
	}
	if tagOf(t, g.mirror, "v1.0.0") != "" {
		t.Fatal("a failed release pushed to the mirror")
	}
}

// A mirror that holds the tag elsewhere, or refuses the token, makes the
// release partial with git's reason; the forge's tag stands.
func TestExecuteMirrorFailureIsPartial(t *testing.T) {
	g := newHostRig(t)
	mb, err := g.mirror.GetBranch(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	createTag(t, g.srv.URL, g.mirrorBy, g.mirror.Slug(), "v3.0.0", mb.SHA)
	sha := g.head()
	res, out := g.execute("v3.0.0", sha, g.tokens(true))
	if res.Status != release.StatusPartial || !strings.HasPrefix(res.Mirrors["backup"], "failed: ") {
		t.Fatalf("release: %+v\n%s", res, out)
	}
	if tagOf(t, g.repo, "v3.0.0") != sha || tagOf(t, g.mirror, "v3.0.0") != mb.SHA {
		t.Fatal("a tag is not where it should be")
	}

	// The forge's owner may not push to the other user's mirror.
	tok := g.tokens(false)
	tok[release.MirrorSecret("backup")] = g.owner.Token + "x"
	res, out = g.execute("v3.0.1", sha, tok)
	if res.Status != release.StatusPartial || !strings.HasPrefix(res.Mirrors["backup"], "failed: ") {
		t.Fatalf("release with a bad mirror token: %+v\n%s", res, out)
	}
}

// Without the forge token, or with one the forge refuses, nothing is
// tagged and the release fails saying why.
func TestExecuteWithoutAToken(t *testing.T) {
	g := newHostRig(t)
	sha := g.head()
	res, out := g.execute("v1.0.0", sha, map[string]string{})
	if res.Status != release.StatusFailed || !strings.Contains(res.Reason, release.TokenSecret) {
		t.Fatalf("release without a token: %+v\n%s", res, out)
	}
	bad := map[string]string{release.TokenSecret: strings.Repeat("ab", 20)}
	res, out = g.execute("v1.0.0", sha, bad)
	if res.Status != release.StatusFailed || !strings.Contains(res.Reason, "401") {
		t.Fatalf("release with a refused token: %+v\n%s", res, out)
	}
	if tagOf(t, g.repo, "v1.0.0") != "" {
		t.Fatal("tagged without a valid token")
	}
}

// ReadInputs takes what Plan builds and refuses anything else, naming the
// variable.
func TestReadInputs(t *testing.T) {
	a := releaseAction(t, "github")
	plan, err := release.Plan(a, release.Target{ForgeURL: "http://forgejo:3000", Repo: "acme/widgets",
		Mirrors: map[string]string{"github": "https://github.com/acme/widgets.git", "ssh": "git@example.com:a/b.git"}})
	if err != nil {
		t.Fatal(err)
	}
	in, err := release.ReadInputs(func(k string) string { return plan.Env[k] }, "/run/secrets")
	if err != nil {
		t.Fatal(err)
	}
	want := []release.MirrorInput{{Name: "github", URL: "https://github.com/acme/widgets.git", Secret: "MIRROR_GITHUB_TOKEN"},
		{Name: "ssh", URL: "git@example.com:a/b.git"}}
	if in.ForgeURL != "http://forgejo:3000" || in.Repo != "acme/widgets" || in.Version != "v1.2.0" || in.SHA != sha ||
		len(in.Mirrors) != 2 || in.Mirrors[0] != want[0] || in.Mirrors[1] != want[1] {
		t.Errorf("inputs %+v", in)
	}
	for name, tc := range map[string]struct{ key, value string }{
		"bad version":               {"RELEASE_VERSION", "v1.2"},
		"bad commit":                {"RELEASE_SHA", "main"},
		"token in the forge URL":    {"RELEASE_FORGE_URL", "http://bot:tok@forgejo:3000"},
		"bad repository":            {"RELEASE_REPO", "widgets"},
		"bad count":                 {"RELEASE_MIRROR_COUNT", "-1"},
		"count past the mirrors":    {"RELEASE_MIRROR_COUNT", "3"},
		"another secret":            {"RELEASE_MIRROR_0_SECRET", "RELEASE_TOKEN"},
		"a path for a secret":       {"RELEASE_MIRROR_0_SECRET", "../etc/passwd"},
		"token in a mirror URL":     {"RELEASE_MIRROR_0_URL", "https://u:tok@github.com/acme/widgets.git"},
		"a pushed mirror over ssh":  {"RELEASE_MIRROR_0_URL", "git@github.com:acme/widgets.git"},
		"a mirror without its name": {"RELEASE_MIRROR_1_NAME", ""},
	} {
		env := func(k string) string {
			if k == tc.key {
				return tc.value
			}
			return plan.Env[k]
		}
		_, err := release.ReadInputs(env, "/run/secrets")
		if !errors.Is(err, release.ErrBadInputs) || (tc.key != "RELEASE_MIRROR_COUNT" && !strings.Contains(err.Error(), tc.key)) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := release.ReadInputs(func(k string) string { return plan.Env[k] }, ""); !errors.Is(err, release.ErrBadInputs) {
		t.Errorf("no secrets directory: %v", err)
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/runner/runnertest"
	"github.com/disinto/disinto/lib/vault"
	"github.com/disinto/disinto/tests/internal/rig"
)

// releaseImage is the runner image this test builds from
// docker/runner/Dockerfile and the daemon runs release actions in.
const releaseImage = "release-e2e/runner:test"

// releaseSetupHint says how a machine gets the Docker engine and the
// local base and Go images the runner image is built from.
const releaseSetupHint = runnertest.SetupHint

// TestSystemReleaseThroughTheVault (spec 70 §7.6, §6.6, §5.11): the
// operator asks for a release with `disinto release`; a bad version is a
// usage error that files nothing; the request opens the high-tier ops pull
// request "vault: release-widgets-v1-2-0"; a human administrator approves
// it at its head and merges it; the built daemon, with DOCKER_HOST set,
// runs the action once in a real runner container, which reaches the
// forge over the engine's bridge and tags the requested commit with the
// declared RELEASE_TOKEN and pushes the tag to the configured mirror with
// its MIRROR_BACKUP_TOKEN; the result, with the validated release report,
// is recorded in the ops repository and shown by status. Another
// dispatcher pass, and a restart of the daemon with its vault data
// deleted, run nothing again.
func TestSystemReleaseThroughTheVault(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and the runner image, starts Gitea, the daemon and runner containers")
	}
	cli := runnertest.Engine(t)
	buildReleaseImage(t, cli)
	srv := forgetest.Start(t)
	// The forge as the runner's network reaches it: the daemon and the
	// runner use the same URL, as they do on the compose network.
	forgeURL := runnertest.ServeOnBridge(t, cli, reverseProxy(t, srv.URL))
	ctx := testCtx(t)
	admin := srv.Admin(t)

	// The mirror: another repository, pushed to with its own token.
	mirrorOwner := srv.NewUser(t, "mirror")
	mirror := srv.NewRepo(t, mirrorOwner, "widgets-mirror")
	mirrorURL := forgeURL + "/" + mirror.Slug() + ".git"
	y := bootRelease(t, srv, forgeURL, func(text string) string {
		return text + "\n[mirrors]\nbackup = \"" + mirrorURL + "\"\n"
	})

	// The release manager's token: a human with write access who may tag.
	rm := srv.NewUser(t, "release-manager")
	project := admin.Repo("acme", "widgets")
	if err := project.AddCollaborator(ctx, rm.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	y.secretSet(t, "RELEASE_TOKEN", rm.Token)
	y.secretSet(t, "MIRROR_BACKUP_TOKEN", mirrorOwner.Token)
	opsRepo := admin.Repo("acme", "widgets-ops")
	// The vault policy allows the mirror's token (an administrator's
	// change of the ops repository).
	allowMirrorToken(t, opsRepo)

	// A version that is not vMAJOR.MINOR.PATCH is a usage error and files
	// nothing.
	_, errOut, err := y.Run(y.daemonEnv, "release", "v1.2", "--project", "widgets")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(errOut, "vMAJOR.MINOR.PATCH") {
		t.Fatalf("release v1.2: %v\n%s", err, errOut)
	}
	if ps, err := opsRepo.ListPulls(ctx, forge.StateAll); err != nil || len(ps) != 0 {
		t.Fatalf("a refused release filed %+v (%v)", ps, err)
	}

	head, err := project.GetBranch(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	out := y.MustRun(t, y.daemonEnv, "release", "v1.2.0", "--project", "widgets")
	const id = "release-widgets-v1-2-0"
	if !strings.Contains(out, id) || !strings.Contains(out, head.SHA) || !strings.Contains(out, "high tier") ||
		!strings.Contains(out, "the tag goes to the mirrors: backup") {
		t.Fatalf("release output:\n%s", out)
	}
	// Asking again finds the first request.
	if again := y.MustRun(t, y.daemonEnv, "release", "v1.2.0", "--project", "widgets"); !strings.Contains(again, "pull request #1 ") {
		t.Errorf("second request:\n%s", again)
	}
	ps, err := opsRepo.ListPulls(ctx, forge.StateOpen)
	if err != nil || len(ps) != 1 || ps[0].Title != "vault: "+id || ps[0].Head != vault.BranchPrefix+id {
		t.Fatalf("ops pull requests: %+v %v", ps, err)
	}
	pr := ps[0]
	f, err := opsRepo.GetFile(ctx, vault.ActionPath(id), pr.HeadSHA)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`formula = "release"`, `"RELEASE_TOKEN"`, `"MIRROR_BACKUP_TOKEN"`, head.SHA, `version = "v1.2.0"`} {
		if !strings.Contains(string(f.Content), want) {
			t.Errorf("action file lacks %s:\n%s", want, f.Content)
		}
	}
	if _, err := project.GetTag(ctx, "v1.2.0"); !errors.Is(err, forge.ErrNotFound) {
		t.Fatalf("tagged before the approval: %v", err)
	}
	// Status shows it waiting for the administrator.
	rig.Await(t, "status to show the release pending", 3*time.Minute, y.died, func() bool {
		st, _, err := y.Run(nil, "status")
		line := grepLines(st, id)
		return err == nil && strings.Contains(line, string(vault.StatePending)) && strings.Contains(line, "high")
	})

	// A human administrator approves at the head and merges; the ops
	// repository's webhook wakes the dispatcher.
	adminApproveAndMerge(t, opsRepo, pr, "Ship it.")
	var rec vault.Result
	rig.Await(t, "the release's recorded outcome", 5*time.Minute, y.died, func() bool {
		rec = readResult(t, opsRepo, id)
		return rec.Done()
	})
	if rec.Status != vault.StatusSucceeded || rec.ExitCode != 0 {
		t.Fatalf("result %+v\ndaemon:\n%s", rec, grepLines(y.d.Out.String(), "vault"))
	}
	tag, err := project.GetTag(ctx, "v1.2.0")
	if err != nil || tag.SHA != head.SHA {
		t.Fatalf("tag v1.2.0: %+v %v; want it at %s", tag, err, head.SHA)
	}
	if mt, err := mirror.GetTag(ctx, "v1.2.0"); err != nil || mt.SHA != head.SHA {
		t.Fatalf("mirror tag v1.2.0: %+v %v; want it at %s", mt, err, head.SHA)
	}
	var report map[string]any
	if err := json.Unmarshal([]byte(rec.Report), &report); err != nil {
		t.Fatalf("report %q: %v", rec.Report, err)
	}
	if report["status"] != "released" || report["tag"] != "created" || report["sha"] != head.SHA ||
		report["mirrors"].(map[string]any)["backup"] != "ok" {
		t.Errorf("report %+v", report)
	}
	if !strings.Contains(rec.Logs, "confirmed on the forge: v1.2.0 at "+head.SHA) {
		t.Errorf("the daemon did not confirm the tag on the forge:\n%s", rec.Logs)
	}
	if !strings.Contains(rec.Approval, "approved by "+srv.AdminLogin) {
		t.Errorf("approval %q", rec.Approval)
	}
	for name, v := range map[string]string{"RELEASE_TOKEN": rm.Token, "MIRROR_BACKUP_TOKEN": mirrorOwner.Token} {
		if strings.Contains(rec.Logs+rec.Report, v) {
			t.Errorf("the result shows %s", name)
		}
	}
	rig.Await(t, "status to show the finished release", time.Minute, y.died, func() bool {
		st, _, err := y.Run(nil, "status")
		return err == nil && strings.Contains(grepLines(st, id), string(vault.StatusSucceeded))
	})
	if show := y.MustRun(t, y.daemonEnv, "vault", "show", id, "--project", "widgets"); !strings.Contains(show, `report: {"version":"v1.2.0"`) {
		t.Errorf("vault show:\n%s", show)
	}
	commits := resultCommits(t, opsRepo, id)
	// A release that completed is not asked for again.
	if _, errOut, err := y.Run(y.daemonEnv, "release", "v1.2.0", "--project", "widgets", "--retry"); err == nil ||
		!strings.Contains(errOut, "completed") {
		t.Errorf("release --retry after the release: %v\n%s", err, errOut)
	}

	if n := strings.Count(y.d.Out.String(), "vault action started"); n != 1 {
		t.Errorf("the daemon started the action %d times, want once", n)
	}

	// Another pass: any push to the ops repository wakes the dispatcher.
	before := time.Now()
	if _, err := opsRepo.PutFile(ctx, forge.FileChange{Path: "knowledge/release-notes.md", Content: []byte("v1.2.0\n"), Message: "notes"}); err != nil {
		t.Fatal(err)
	}
	rig.Await(t, "another dispatcher pass", 3*time.Minute, y.died, func() bool {
		st, ok := y.vaultEntry(id)
		return ok && st.Checked.After(before)
	})

	// A restart with the dispatcher's local data deleted.
	if err := y.d.Stop(t, 2*time.Minute); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(y.Data, "vault")); err != nil {
		t.Fatal(err)
	}
	y.start(t, 2*time.Second)
	var st releaseVaultStatus
	rig.Await(t, "the restarted dispatcher's pass", 3*time.Minute, y.died, func() bool {
		var ok bool
		st, ok = y.vaultEntry(id)
		return ok
	})
	if st.State != string(vault.StatusSucceeded) {
		t.Errorf("after the restart, status shows %+v", st)
	}
	t.Logf("result:\n%s\nlogs:\n%s", rec.Report, rec.Logs)
	if got := resultCommits(t, opsRepo, id); got != commits {
		t.Errorf("the result was written %d times, then %d: the action ran again", commits, got)
	}
	if again := readResult(t, opsRepo, id); again.Claim != rec.Claim || again.Status != rec.Status {
		t.Errorf("result changed: %+v", again)
	}
	if n := strings.Count(y.d.Out.String(), "vault action started"); n != 0 {
		t.Errorf("the restarted daemon started the action %d times", n)
	}
}

// releaseVaultStatus is one vault action in the daemon's /status.
type releaseVaultStatus struct {
	ID      string    `json:"id"`
	State   string    `json:"state"`
	Detail  string    `json:"detail"`
	Checked time.Time `json:"checked"`
}

// vaultEntry is action id as the running daemon's dispatcher last saw
// it; false before its first pass or while the daemon does not answer.
func (y *system) vaultEntry(id string) (releaseVaultStatus, bool) {
	resp, err := http.Get("http://" + y.statusListen + "/status")
	if err != nil {
		return releaseVaultStatus{}, false
	}
	defer resp.Body.Close()
	var rep struct {
		Vault []releaseVaultStatus `json:"vault"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&rep) != nil {
		return releaseVaultStatus{}, false
	}
	for _, v := range rep.Vault {
		if v.ID == id {
			return v, true
		}
	}
	return releaseVaultStatus{}, false
}

// bootRelease is bootWith for a forge at forgeURL (srv behind a proxy),
// with the daemon's Docker engine, runner image and network set, and the
// project file edited by project.
func bootRelease(t *testing.T, srv *forgetest.Server, forgeURL string, project func(string) string) *system {
	t.Helper()
	y := initSystem(t, srv, forgeURL, laneOptions{project: project, env: []string{
		"DOCKER_HOST=" + dockerHost(), "DISINTO_RUNNER_IMAGE=" + releaseImage, "DISINTO_RUNNER_NETWORK=bridge",
	}})
	if _, err := config.ReadEnvFile(y.EnvFile); err != nil {
		t.Fatal(err)
	}
	y.start(t, 2*time.Second)
	return y
}

// secretSet stores value as the secret name, as an operator does: on
// stdin, never in argv.
func (y *system) secretSet(t *testing.T, name, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := y.Command(ctx, nil, "secrets", "set", name)
	cmd.Stdin = strings.NewReader(value + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("secrets set %s: %v\n%s", name, err, out)
	}
}

// allowMirrorToken adds MIRROR_BACKUP_TOKEN to the ops policy's secret
// allowlist, as the administrator.
func allowMirrorToken(t *testing.T, ops *forge.RepoClient) {
	t.Helper()
	ctx := testCtx(t)
	f, err := ops.GetFile(ctx, vault.PolicyPath, "")
	if err != nil {
		t.Fatal(err)
	}
	names := append(append([]string{}, vault.DefaultSecrets...), "MIRROR_BACKUP_TOKEN")
	allow := "\n[allow]\nsecrets = [\"" + strings.Join(names, "\", \"") + "\"]\n"
	if _, err := ops.PutFile(ctx, forge.FileChange{Path: vault.PolicyPath, SHA: f.SHA, Content: append(f.Content, allow...),
		Message: "vault: allow the mirror's token"}); err != nil {
		t.Fatal(err)
	}
}

// readResult reads the action's result record on the ops primary branch
// (zero while there is none).
func readResult(t *testing.T, ops *forge.RepoClient, id string) vault.Result {
	t.Helper()
	f, err := ops.GetFile(testCtx(t), vault.ResultPath(id), "")
	if errors.Is(err, forge.ErrNotFound) {
		return vault.Result{Status: vault.StatusStarted}
	}
	if err != nil {
		t.Fatal(err)
	}
	r, err := vault.ParseResult(vault.ResultPath(id), f.Content)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// resultCommits counts the commits of the ops primary branch that wrote
// the action's result record.
func resultCommits(t *testing.T, ops *forge.RepoClient, id string) int {
	t.Helper()
	cs, err := ops.PathCommits(testCtx(t), "main", vault.ResultPath(id))
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

// dockerHost is the engine the daemon is pointed at.
func dockerHost() string {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return h
	}
	return "unix:///var/run/docker.sock"
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

// buildReleaseImage builds the runner image as releaseImage through the
// engine API, with the classic builder (the base and Go images are local).
func buildReleaseImage(t *testing.T, cli *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if err := runnertest.Build(ctx, cli, filepath.Join("..", ".."), releaseImage); err != nil {
		t.Fatalf("%v (%s)", err, releaseSetupHint)
	}
}

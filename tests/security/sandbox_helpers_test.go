package security

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/review"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/sandbox"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
	"github.com/disinto/disinto/tests/internal/rig"
)

// sessionWorld is a project on the real Gitea with a dev bot, a review bot
// and the owner; a data dir laid out as the daemon lays it out as root
// (private but for the sessions' workspaces); an env file holding every
// bot's credentials; and the scripted model server the real CLI talks to.
type sessionWorld struct {
	*rig.Scene
	t       *testing.T
	data    string
	envFile string
	sb      *sandbox.Sandbox
	led     *ledger.Ledger
	rt      *agent.Runtime
}

func newSessionWorld(t *testing.T, scenarios ...claudetest.Scenario) *sessionWorld {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the session sandbox needs root: sessions get uids of their own (CI runs as root)")
	}
	w := &sessionWorld{t: t, Scene: rig.NewScene(t, gitea.Get(t), "proj", scenarios...)}
	w.data = sandboxtest.Dir(t, "data")
	w.envFile = filepath.Join(w.data, "disinto.env")
	rig.WriteEnvFile(t, w.envFile, w.Credentials()...)
	for _, d := range []string{"state", "logs", "clones"} {
		if err := os.MkdirAll(filepath.Join(w.data, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := sandbox.PrivateDataDir(w.data, "sessions"); err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Options{Root: filepath.Join(w.data, "sessions"), Isolate: true})
	if err != nil {
		t.Fatal(err)
	}
	w.sb = sb
	w.led, err = ledger.Open(filepath.Join(w.data, "ledger"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.led.Close() })
	w.rt = agent.New(agent.Options{Ledger: w.led, Log: zerolog.Nop()})
	return w
}

// runner is the daemon's model runner: the real CLI against the scripted
// model server.
func (w *sessionWorld) runner() claude.Runner {
	w.t.Helper()
	r, err := claude.New(claude.Options{
		Bin:           claudetest.RequireCLI(w.t),
		Backends:      []claude.Backend{{Name: "scripted", BaseURL: w.ModelURL, APIKey: "sk-test-not-a-real-key", MaxSessions: 2}},
		BaseEnv:       claudetest.Env(w.t),
		IdleGrace:     30 * time.Second,
		Timeout:       4 * time.Minute,
		TranscriptDir: filepath.Join(w.data, "transcripts"),
		Logger:        zerolog.Nop(),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// tick runs one pass of a and waits for the work it started.
func (w *sessionWorld) tick(a agent.Agent, proj *config.Project, role config.Role) {
	w.t.Helper()
	ctx := testCtx(w.t)
	if err := w.rt.Tick(ctx, a, proj, role, agent.CauseManual); err != nil {
		w.t.Fatalf("%s tick: %v", role, err)
	}
	if err := w.rt.Wait(ctx); err != nil {
		w.t.Fatalf("%s wait: %v", role, err)
	}
}

// toolResults are the distinct tool results the model server saw: what
// the sessions' commands printed (a conversation repeats earlier ones).
func (w *sessionWorld) toolResults() string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, r := range w.Model.Requests() {
		for _, tr := range r.ToolResults {
			if !seen[tr] {
				seen[tr] = true
				b.WriteString(tr)
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// requestText is everything the model server received.
func (w *sessionWorld) requestText() string {
	var b strings.Builder
	for _, r := range w.Model.Requests() {
		data, _ := json.Marshal(r.Body)
		b.Write(data)
	}
	return b.String()
}

// holder starts a long-lived root process whose environment holds the
// dev bot's token, standing in for the daemon's own process.
func (w *sessionWorld) holder() int {
	w.t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.Env = []string{"FORGE_TOKEN=" + w.Dev.Token, "FORGE_PASS=" + w.Dev.Password}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// reviewAgent is the review agent of proj as the daemon builds it: the
// review bot's forge client and clone, sessions in the world's sandbox.
func (w *sessionWorld) reviewAgent(proj *config.Project) *review.Agent {
	w.t.Helper()
	f, err := formula.Load(formulas.FS, "review-pr")
	if err != nil {
		w.t.Fatal(err)
	}
	fc, err := forge.New(forge.Options{URL: w.Srv.URL, Token: w.Reviewer.Token, User: w.Reviewer.Login})
	if err != nil {
		w.t.Fatal(err)
	}
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: w.Srv.URL, Username: w.Reviewer.Login, Password: w.Reviewer.Password}})
	a, err := review.New(review.Options{
		Project: proj, Forge: fc.Repo(w.Repo.Owner(), w.Repo.Name()), Claude: w.runner(), Formula: f,
		Checkout: review.NewGitCheckout(review.CheckoutOptions{Git: g, URL: w.Srv.URL + "/" + w.Repo.Slug() + ".git",
			CloneDir: filepath.Join(w.data, "review", "clone"), Sandbox: w.sb, KeyPrefix: "review-proj"}),
		StateDir: filepath.Join(w.data, "state", "review"), Timeout: 4 * time.Minute,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return a
}

// pushAs pushes files to branch of the repository at slug as u, starting
// from main.
func (w *sessionWorld) pushAs(u forgetest.User, slug, branch string, files map[string]string) {
	w.t.Helper()
	dir := filepath.Join(w.t.TempDir(), "clone")
	gitT(w.t, "", "clone", "-q", w.authURL(u, slug), dir)
	gitT(w.t, dir, "checkout", "-q", "-B", branch)
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			w.t.Fatal(err)
		}
	}
	gitT(w.t, dir, "add", "-A")
	gitT(w.t, dir, "-c", "user.name="+u.Login, "-c", "user.email="+u.Login+"@example.test", "commit", "-q", "-m", "change")
	gitT(w.t, dir, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
}

func (w *sessionWorld) authURL(u forgetest.User, slug string) string {
	pu, err := url.Parse(w.Srv.URL)
	if err != nil {
		w.t.Fatal(err)
	}
	pu.User = url.UserPassword(u.Login, u.Password)
	pu.Path = "/" + slug + ".git"
	return pu.String()
}

// markerDir is a directory any session user could write a marker file
// to, so that a hook that ran would leave a trace whichever uid ran it.
func markerDir(t *testing.T) string {
	t.Helper()
	d := sandboxtest.Dir(t, "markers")
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args[0], err, out)
	}
	return strings.TrimSpace(string(out))
}

package security

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/ledger"
)

// probe is what a prompt-injected session would try: its environment,
// the env file, the data dir with state, ledger and logs, another
// session's workspace, and the environment of a daemon process. Every
// command runs whatever the one before it did.
func probe(w *sessionWorld, other string, pids ...int) string {
	cmds := []string{
		"echo PROBE-BEGIN", "id", "env",
		"cat " + w.envFile, "ls -la " + w.data, "ls -laR " + filepath.Join(w.data, "state"),
		"cat " + filepath.Join(w.data, "ledger") + "/*", "ls -la " + filepath.Join(w.data, "logs"),
		"ls -la " + filepath.Join(w.data, "sessions"), "ls -la " + other, "cat " + filepath.Join(other, "home", "secret"),
		"cat ~/.git-credentials ~/.gitconfig", "git config --list --show-origin",
	}
	for _, pid := range pids {
		cmds = append(cmds, fmt.Sprintf("cat /proc/%d/environ", pid))
	}
	return strings.Join(append(cmds, "echo PROBE-END"), "; ")
}

// TestSessionsSeeNoCredential: the model, in a dev session and then in a
// review session, goes looking for credentials with its Bash tool. No
// tool result holds any token or password of the factory, while the dev
// session's commits still become a pull request (the daemon pushes).
func TestSessionsSeeNoCredential(t *testing.T) {
	t.Parallel()
	// The scenario of each role is picked by its prompt's first line.
	devTurns := func(p string) []claudetest.Turn {
		return []claudetest.Turn{
			claudetest.Tools(claudetest.Bash(p)),
			claudetest.Tools(claudetest.Bash(`printf 'probed\n' >> PROBED.md && git add PROBED.md && ` +
				`git commit -q -m "fix: probe (#$DISINTO_ISSUE)" && printf 'PHASE:awaiting_ci\n' > "$DISINTO_PHASE_FILE" && echo committed`)),
			claudetest.Text("Done."),
		}
	}
	reviewTurns := func(p string) []claudetest.Turn {
		verdict := `{"verdict":"REQUEST_CHANGES","verdict_reason":"probe","review_markdown":"Probed.","findings":[]}`
		return []claudetest.Turn{
			claudetest.Tools(claudetest.Bash(p)),
			claudetest.Tools(claudetest.Bash(fmt.Sprintf(`printf '%%s' '%s' > "$DISINTO_REVIEW_FILE" && echo written`, verdict))),
			claudetest.Text("Reviewed."),
		}
	}
	// The probe needs paths of this world, which exist only once it is
	// made: build it with placeholder scenarios, then script them.
	w := newSessionWorld(t)
	other, err := w.sb.Workspace("dev-proj-issue-999")
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(other.Home(), "secret")
	if err := os.WriteFile(secret, []byte(w.Reviewer.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := other.Own(secret); err != nil {
		t.Fatal(err)
	}
	p := probe(w, other.Dir(), w.holder(), os.Getpid())
	if err := w.Model.SetScenarios(
		claudetest.Scenario{Name: "probe-dev", Marker: "You are the dev agent", Turns: devTurns(p)},
		claudetest.Scenario{Name: "probe-review", Marker: "You are the review agent", Turns: reviewTurns(p)},
	); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	proj := &config.Project{Name: "proj", Repo: w.Repo.Slug(), ForgeURL: w.Srv.URL, PrimaryBranch: "main",
		CI: config.CI{System: config.CINone}}

	// The dev session.
	issue, err := w.Repo.CreateIssue(ctx, forge.NewIssue{Title: "Probe", Body: "Look around.", Labels: []forge.LabelName{forge.LabelBacklog}})
	if err != nil {
		t.Fatal(err)
	}
	devForge, err := forge.New(forge.Options{URL: w.Srv.URL, Token: w.Dev.Token, User: w.Dev.Login})
	if err != nil {
		t.Fatal(err)
	}
	devFormula, err := formula.Load(formulas.FS, "dev")
	if err != nil {
		t.Fatal(err)
	}
	d, err := dev.New(dev.Options{
		Project: "proj", Repo: w.Repo.Slug(), PrimaryBranch: "main", CISystem: config.CINone,
		Forge: devForge.Repo(w.Repo.Owner(), w.Repo.Name()), Claude: w.runner(),
		Git: dev.NewGit(dev.GitOptions{Clone: filepath.Join(w.data, "clones", "proj"), RemoteURL: w.Srv.URL + "/" + w.Repo.Slug() + ".git",
			ForgeURL: w.Srv.URL, User: w.Dev.Login, Password: w.Dev.Password, Primary: "main"}),
		Formula: devFormula, DataDir: w.data, Sandbox: w.sb, ReviewBot: w.Reviewer.Login, Secrets: w.Secrets(),
		Limits: dev.Limits{MaxTurns: 20, SessionTimeout: 4 * time.Minute}, Log: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.tick(d, proj, config.RoleDev)
	pulls, err := w.Repo.ListPulls(ctx, forge.StateOpen)
	if err != nil {
		t.Fatal(err)
	}
	var pr forge.PullRequest
	for _, p := range pulls {
		if p.Head == fmt.Sprintf("fix/issue-%d", issue.Number) {
			pr = p
		}
	}
	if pr.Number == 0 {
		recs, _, _ := ledger.Read(filepath.Join(w.data, "ledger"), ledger.Filter{})
		st, _, _ := d.State(issue.Number)
		t.Fatalf("the dev session's commit did not become a pull request; open pulls %+v\nledger %+v\nstate %+v\ntool results:\n%s",
			pulls, recs, st, w.toolResults())
	}

	// The review session, on that pull request.
	w.tick(w.reviewAgent(proj), proj, config.RoleReview)

	results := w.toolResults()
	if n := strings.Count(results, "PROBE-END"); n != 2 {
		t.Fatalf("%d probes ran to the end, want 2 (dev and review): the test proves nothing\n%s", n, results)
	}
	for _, s := range w.Secrets() {
		if strings.Contains(results, s) {
			t.Errorf("a session read the credential %q…", s[:4])
		}
	}
	for _, denied := range []string{"cat: " + w.envFile + ": Permission denied", "/proc/"} {
		if !strings.Contains(results, denied) {
			t.Errorf("tool results lack %q", denied)
		}
	}
}

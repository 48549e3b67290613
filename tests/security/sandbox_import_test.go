package security

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/formulas"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/formula"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/memory"
	"github.com/disinto/disinto/lib/ops"
)

// devAgent is the dev agent of the world's project as the daemon builds
// it: the dev bot's forge client and clone under the data dir, sessions
// in the world's sandbox.
func (w *sessionWorld) devAgent() *dev.Agent {
	w.t.Helper()
	fc, err := forge.New(forge.Options{URL: w.Srv.URL, Token: w.Dev.Token, User: w.Dev.Login})
	if err != nil {
		w.t.Fatal(err)
	}
	f, err := formula.Load(formulas.FS, "dev")
	if err != nil {
		w.t.Fatal(err)
	}
	d, err := dev.New(dev.Options{
		Project: "proj", Repo: w.Repo.Slug(), PrimaryBranch: "main", CISystem: config.CINone,
		Forge: fc.Repo(w.Repo.Owner(), w.Repo.Name()), Claude: w.runner(),
		Git: dev.NewGit(dev.GitOptions{Clone: filepath.Join(w.data, "clones", "proj"), RemoteURL: w.Srv.URL + "/" + w.Repo.Slug() + ".git",
			ForgeURL: w.Srv.URL, User: w.Dev.Login, Password: w.Dev.Password, Primary: "main"}),
		Formula: f, DataDir: w.data, Sandbox: w.sb, ReviewBot: w.Reviewer.Login, Secrets: w.Secrets(),
		Limits: dev.Limits{MaxTurns: 20, SessionTimeout: 4 * time.Minute}, Log: zerolog.Nop(),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return d
}

// TestDevSessionCannotPublishAnotherRepository: the dev session plants,
// in its checkout, alternates and a branch ref leading to another
// project's clone in the data dir, or a FIFO as its branch ref. The
// daemon reads nothing of it: the other project's commit never reaches
// the forge, the run ends in session.refused, and the FIFO does not hold
// it up.
func TestDevSessionCannotPublishAnotherRepository(t *testing.T) {
	t.Parallel()
	for _, attack := range []string{"alternates", "fifo-ref"} {
		t.Run(attack, func(t *testing.T) {
			t.Parallel()
			w := newSessionWorld(t)
			// Another project, private, with a clone in the data dir.
			owner := w.Srv.NewUser(t, "other-owner")
			other := w.Srv.NewRepo(t, owner, "other")
			w.pushAs(owner, other.Slug(), "main", map[string]string{"secret.txt": "OTHER-PROJECT-CANARY\n"})
			otherClone := filepath.Join(w.data, "clones", "other")
			gitT(t, "", "clone", "-q", w.authURL(owner, other.Slug()), otherClone)
			secret := gitT(t, otherClone, "rev-parse", "HEAD")
			gitT(t, otherClone, "update-ref", "refs/heads/main", secret)
			otherGit := filepath.Join(otherClone, ".git")

			plant := fmt.Sprintf(`b=refs/heads/fix/issue-$DISINTO_ISSUE; printf '%%s\n' %s > .git/objects/info/alternates && `+
				`rm -f .git/$b && ln -s %s .git/$b`, filepath.Join(otherGit, "objects"), filepath.Join(otherGit, "refs", "heads", "main"))
			if attack == "fifo-ref" {
				plant = `b=refs/heads/fix/issue-$DISINTO_ISSUE; rm -f .git/$b && mkfifo .git/$b`
			}
			if err := w.Model.SetScenarios(claudetest.Scenario{Name: "plant-" + attack, Default: true, Turns: []claudetest.Turn{
				claudetest.Tools(claudetest.Bash(`printf 'x\n' > X.md && git add X.md && git commit -q -m "fix: x (#$DISINTO_ISSUE)" && echo committed`)),
				claudetest.Tools(claudetest.Bash(plant + ` && printf 'PHASE:awaiting_ci\n' > "$DISINTO_PHASE_FILE" && echo planted`)),
				claudetest.Text("Done."),
			}}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			issue, err := w.Repo.CreateIssue(ctx, forge.NewIssue{Title: "Fix x", Body: "Add X.md.", Labels: []forge.LabelName{forge.LabelBacklog}})
			if err != nil {
				t.Fatal(err)
			}
			proj := &config.Project{Name: "proj", Repo: w.Repo.Slug(), ForgeURL: w.Srv.URL, PrimaryBranch: "main", CI: config.CI{System: config.CINone}}
			d := w.devAgent()
			// The run must end well before the 10 minutes a hung git
			// would wait: ctx bounds it.
			if err := w.rt.Tick(ctx, d, proj, config.RoleDev, agent.CauseManual); err != nil {
				t.Fatalf("dev tick: %v", err)
			}
			if err := w.rt.Wait(ctx); err != nil {
				t.Fatalf("dev wait: %v (a git the session's checkout holds up?)", err)
			}
			if n := strings.Count(w.toolResults(), "planted"); n == 0 {
				t.Fatalf("the session did not plant its checkout: the test proves nothing\n%s", w.toolResults())
			}

			// Nothing of the other project is on the project's forge repo.
			heads := gitT(t, "", "ls-remote", w.authURL(w.Owner, w.Repo.Slug()))
			if strings.Contains(heads, secret) {
				t.Errorf("the other project's commit %s was pushed to %s:\n%s", secret, w.Repo.Slug(), heads)
			}
			probe := filepath.Join(t.TempDir(), "probe")
			gitT(t, "", "clone", "-q", "--mirror", w.authURL(w.Owner, w.Repo.Slug()), probe)
			if out := gitT(t, probe, "log", "--all", "--format=%H %s"); strings.Contains(out, secret) {
				t.Errorf("the forge repository holds the other project's history:\n%s", out)
			}
			pulls, err := w.Repo.ListPulls(ctx, forge.StateOpen)
			if err != nil {
				t.Fatal(err)
			}
			if len(pulls) != 0 {
				t.Errorf("a pull request was opened from the planted checkout: %+v", pulls)
			}
			recs, _, err := ledger.Read(filepath.Join(w.data, "ledger"), ledger.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			var codes []ledger.Code
			for _, r := range recs {
				if r.Issue == issue.Number {
					codes = append(codes, r.Code)
				}
			}
			if len(codes) != 1 || codes[0] != ledger.CodeSessionRefused {
				t.Errorf("ledger codes of issue #%d: %v; want [%s]", issue.Number, codes, ledger.CodeSessionRefused)
			}
		})
	}
}

// TestDigestSessionCannotPlantItsLessons: the digest session makes its
// lessons file a link to a file only the daemon may read, or a FIFO. The
// digest is refused at once, and nothing of that file reaches the
// lessons later sessions are shown.
func TestDigestSessionCannotPlantItsLessons(t *testing.T) {
	t.Parallel()
	for _, attack := range []string{"symlink", "fifo"} {
		t.Run(attack, func(t *testing.T) {
			t.Parallel()
			w := newSessionWorld(t)
			secret := filepath.Join(w.data, "state", "daemon-notes.md")
			if err := os.WriteFile(secret, []byte("- DAEMON-ONLY-CANARY "+w.Dev.Token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			plant := fmt.Sprintf(`ln -sf %s "$%s" && echo planted`, secret, formula.EnvLessonsFile)
			if attack == "fifo" {
				plant = fmt.Sprintf(`rm -f "$%[1]s"; mkfifo "$%[1]s" && echo planted`, formula.EnvLessonsFile)
			}
			if err := w.Model.SetScenarios(claudetest.Scenario{Name: "digest-" + attack, Default: true, Turns: []claudetest.Turn{
				claudetest.Tools(claudetest.Bash(plant)), claudetest.Text("Done."),
			}}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			bot := w.Srv.NewUser(t, "digest-bot")
			if _, err := bot.Client.CreateRepo(ctx, forge.NewRepo{Name: ".profile", AutoInit: true, DefaultBranch: "main", Private: true}); err != nil {
				t.Fatal(err)
			}
			g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
				Credentials: &git.Credentials{URL: w.Srv.URL, Username: bot.Login, Password: bot.Password}})
			repo := ops.Open(ops.Options{Git: g, URL: w.Srv.URL + "/" + bot.Login + "/.profile.git", Dir: filepath.Join(w.data, "profile"),
				Name: bot.Login, Email: bot.Login + "@disinto.local"})
			f, err := formula.Load(formulas.FS, "digest")
			if err != nil {
				t.Fatal(err)
			}
			j := memory.New(memory.Options{Bot: bot.Login, Repo: repo, QueueFile: filepath.Join(w.data, "state", "journal-queue"), Log: zerolog.Nop()})
			day := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			for i := int64(1); i <= 4; i++ {
				rec := ledger.Record{Run: fmt.Sprintf("proj-dev-%d", i), Start: day, End: day, Project: "proj", Role: "dev", Issue: i, PR: i + 1,
					Reason: ledger.ReasonMerged, Detail: "merged", Turns: 3, Wall: 2 * time.Minute}
				if err := j.Add(rec); err != nil {
					t.Fatal(err)
				}
			}
			if err := j.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			d := memory.NewDigester(memory.DigestOptions{Bot: bot.Login, Repo: repo, Formula: f, Claude: w.runner(), Sandbox: w.sb,
				Bound: 400, Timeout: 3 * time.Minute, Log: zerolog.Nop()})
			done := make(chan error, 1)
			go func() {
				_, err := d.Maybe(ctx)
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, memory.ErrDigestFailed) || !strings.Contains(err.Error(), "refused") {
					t.Errorf("digest: %v; want a refused lessons file", err)
				}
			case <-ctx.Done():
				t.Fatal("the digest is held up by the lessons file")
			}
			if !strings.Contains(w.toolResults(), "planted") {
				t.Fatalf("the session did not plant its lessons file: the test proves nothing\n%s", w.toolResults())
			}
			if lf, err := bot.Client.Repo(bot.Login, ".profile").GetFile(ctx, memory.LessonsFile, "main"); err == nil {
				t.Errorf("lessons landed from a planted file:\n%s", lf.Content)
			}
		})
	}
}

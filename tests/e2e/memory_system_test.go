package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/memory"
	"github.com/disinto/disinto/tests/internal/rig"
)

// memLesson is what the scripted digest session learns.
const memLesson = "Name every new file after what it holds; reviewers ask for it."

// memOverride is the changed instruction of the dev formula override.
const memOverride = "MEMORY-OVERRIDE: keep every change under ten lines."

// TestMemory drives the dev bot's memory through the built daemon: a
// broken .profile override of the dev formula is refused with file:line
// (in the log and in status) and the shipped formula serves; the merged
// issue's journal entry pushes the journal past the digest bound, one
// digest session writes lessons.md; a fixed override lands and the next
// dev session, without a restart, gets both the override's instruction
// and the lessons; later entries digest nothing more.
func TestMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds disinto and starts Gitea, the daemon and the claude CLI")
	}
	y := bootSystemEnv(t, 30*time.Second, []string{"DISINTO_SYNC_INTERVAL=1s"},
		claudetest.Scenario{Name: "mem-digest", Marker: "Journal entries to digest", Turns: []claudetest.Turn{
			claudetest.Tools(claudetest.Bash(`printf -- '- %s\n' '` + memLesson + `' > "$DISINTO_LESSONS_FILE" && echo written`)),
			claudetest.Text("Lessons written."),
		}},
		claudetest.Scenario{Name: "mem-review", Marker: "Review pull request #", Turns: []claudetest.Turn{
			writeReview(`{"verdict":"APPROVE","verdict_reason":"as asked","review_markdown":"Looks right."}`),
			claudetest.Text("Review written."),
		}},
		claudetest.Scenario{Name: "mem-dev-1", Turns: []claudetest.Turn{implement("one.txt", "one"), claudetest.Text("Added one.txt.")}},
		claudetest.Scenario{Name: "mem-dev-2", Turns: []claudetest.Turn{implement("two.txt", "two"), claudetest.Text("Added two.txt.")}},
	)
	ctx := testCtx(t)
	w := &sysWatch{t: t, ctx: ctx, admin: y.srv.Admin(t).Repo("acme", "widgets"), died: y.died}
	profile := y.srv.Admin(t).Repo("dev-bot", ".profile")

	// A broken override and a journal just short of the digest bound.
	put := func(path, content, sha string) {
		t.Helper()
		if _, err := profile.PutFile(ctx, forge.FileChange{Path: path, Content: []byte(content), SHA: sha, Branch: "main", Message: "test: " + path}); err != nil {
			t.Fatal(err)
		}
	}
	put("formula.toml", "name = \"dev\"\ndescription = \"broken\"\nversion = \"one\"\n", "")
	put("journal/2026-11-30.md", seededJournal(memory.DefaultDigestBound-64), "")

	type status struct {
		Formulas []struct {
			Project, Role, Name, Source, Refused string
		} `json:"formulas"`
		Journals []memory.Status `json:"journals"`
		Recent   []ledger.Record `json:"recent"`
	}
	read := func() status {
		var st status
		out := y.MustRun(t, nil, "status", "--json")
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		return st
	}
	devFormula := func(st status) (source, refused string) {
		for _, f := range st.Formulas {
			if f.Role == "dev" {
				return f.Source, f.Refused
			}
		}
		return "", ""
	}
	rig.Await(t, "the broken override refused in status", time.Minute, y.died, func() bool {
		src, refused := devFormula(read())
		return src == "embedded:dev.toml" && strings.Contains(refused, "dev-bot/.profile/formula.toml:3")
	})
	if out := y.d.Out.String(); !strings.Contains(out, "formula.toml:3") {
		t.Errorf("the daemon's log does not name the broken override's line:\n%s", out)
	}
	if out := y.MustRun(t, nil, "status"); !strings.Contains(out, "override refused") {
		t.Errorf("status does not say the override was refused:\n%s", out)
	}

	// The shipped formula serves the first issue.
	one := w.backlogIssue("Add one", "scenario: mem-dev-1\n\nAdd one.txt.")
	pr := w.mergedPull(one)
	first := firstPrompt(t, y.model, "mem-dev-1")
	if !strings.Contains(first, "Implement issue #") || strings.Contains(first, "Lessons learned") {
		t.Errorf("the first dev prompt is not the shipped formula's, or has lessons:\n%s", first)
	}

	// Its journal entry crosses the bound: one digest, lessons.md lands.
	var lessons string
	rig.Await(t, "lessons.md in the dev bot's .profile", 2*time.Minute, y.died, func() bool {
		f, err := profile.GetFile(ctx, memory.LessonsFile, "main")
		lessons = string(f.Content)
		return err == nil && strings.Contains(lessons, memLesson)
	})
	journal, err := profile.GetFile(ctx, "journal/"+time.Now().UTC().Format("2006-01-02")+".md", "main")
	if err != nil || !strings.Contains(string(journal.Content), fmt.Sprintf("issue #%d, pull request #%d, merged", one, pr.Number)) {
		t.Errorf("the journal lacks the merged run of #%d (%v):\n%s", one, err, journal.Content)
	}
	if _, err := profile.GetFile(ctx, memory.DigestStateFile, "main"); err != nil {
		t.Errorf("no digest bookkeeping next to the lessons: %v", err)
	}

	// A fixed override: the shipped formula with a changed instruction.
	shipped, err := os.ReadFile("../../formulas/dev.toml")
	if err != nil {
		t.Fatal(err)
	}
	override := strings.Replace(string(shipped), "description = '''\n", "description = '''\n"+memOverride+"\n", 1)
	cur, err := profile.GetFile(ctx, "formula.toml", "main")
	if err != nil {
		t.Fatal(err)
	}
	put("formula.toml", override, cur.SHA)
	rig.Await(t, "the fixed override in force", time.Minute, y.died, func() bool {
		src, refused := devFormula(read())
		return src == "profile:dev-bot/.profile/formula.toml" && refused == ""
	})

	// The next session, without a restart, has the override and the lessons.
	two := w.backlogIssue("Add two", "scenario: mem-dev-2\n\nAdd two.txt.")
	w.mergedPull(two)
	second := firstPrompt(t, y.model, "mem-dev-2")
	for _, want := range []string{memOverride, "## Lessons learned", memLesson} {
		if !strings.Contains(second, want) {
			t.Errorf("the second dev prompt lacks %q:\n%s", want, second)
		}
	}

	// One bound crossing, one digest; status shows the memory.
	rig.Await(t, "the second run in the journal", time.Minute, y.died, func() bool {
		for _, j := range read().Journals {
			if j.Bot == "dev-bot" && strings.Contains(j.LastEntry, fmt.Sprintf("issue #%d", two)) {
				return true
			}
		}
		return false
	})
	if n := sessions(y.model, "mem-digest"); n != 1 {
		t.Errorf("%d digest sessions, want 1", n)
	}
	for _, j := range read().Journals {
		if j.Bot == "dev-bot" && (j.Lessons == 0 || j.Digest == nil || j.Digest.Last.IsZero()) {
			t.Errorf("status of the dev bot's memory: %+v", j)
		}
	}
	if out := y.MustRun(t, nil, "status"); !strings.Contains(out, "lessons of dev-bot: ") || !strings.Contains(out, "last entry ") {
		t.Errorf("status does not show the lessons and the last entry:\n%s", out)
	}
	if err := y.d.Stop(t, time.Minute); err != nil {
		t.Errorf("daemon exit after SIGTERM: %v", err)
	}
}

// seededJournal is a journal day of about size bytes of earlier runs.
func seededJournal(size int) string {
	day := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var b strings.Builder
	b.WriteString("# Journal of dev-bot, 2026-11-30\n")
	for i := 0; b.Len() < size; i++ {
		r := ledger.Record{Run: fmt.Sprintf("widgets-dev-%d", i), End: day.Add(time.Duration(i) * time.Minute), Project: "widgets",
			Role: "dev", Issue: int64(100 + i), PR: int64(200 + i), Reason: ledger.ReasonMerged, Turns: 7, Wall: 3 * time.Minute}
		e := memory.Entry(r)
		if b.Len()+len(e) > size {
			break
		}
		b.Write(e)
	}
	return b.String()
}

// firstPrompt is the first user text of scenario name's first session.
func firstPrompt(t *testing.T, model *claudetest.Server, name string) string {
	t.Helper()
	for _, r := range model.MessageRequests(name) {
		if r.Turn == 0 && len(r.Texts) > 0 {
			return strings.Join(r.Texts, "\n")
		}
	}
	t.Fatalf("no session of scenario %s", name)
	return ""
}

// sessions counts the conversations the model server had of scenario
// name.
func sessions(model *claudetest.Server, name string) int {
	n := 0
	for _, r := range model.MessageRequests(name) {
		if r.Turn == 0 {
			n++
		}
	}
	return n
}

package memory_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ledger"
	"github.com/disinto/disinto/lib/memory"
	"github.com/disinto/disinto/lib/ops"
	"github.com/disinto/disinto/lib/redact"
)

var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

var day = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)

func record(issue, pr int64, reason ledger.Reason, code ledger.Code, detail string) ledger.Record {
	return ledger.Record{Run: "proj-dev-1", Start: day, End: day, Project: "proj", Role: "dev", Issue: issue, PR: pr,
		Reason: reason, Code: code, Detail: detail, CostUSD: 0.25, Turns: 3, Wall: 2 * time.Minute}
}

// TestJournalLandsAfterTheForgeRecovers: entries queue while the forge
// refuses the .profile push and all land, in order, once it answers.
func TestJournalLandsAfterTheForgeRecovers(t *testing.T) {
	srv := gitea.Get(t)
	bot := srv.NewUser(t, "dev-bot")
	if _, err := bot.Client.CreateRepo(t.Context(), forge.NewRepo{Name: ".profile", AutoInit: true, DefaultBranch: "main", Private: true}); err != nil {
		t.Fatal(err)
	}
	proxy := forgetest.NewProxy(t, srv.URL)
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: proxy.URL, Username: bot.Login, Password: bot.Password}})
	data := t.TempDir()
	repo := ops.Open(ops.Options{Git: g, URL: proxy.URL + "/" + bot.Login + "/.profile.git", Dir: filepath.Join(data, "profile"),
		Name: bot.Login, Email: bot.Login + "@disinto.local"})
	j := memory.New(memory.Options{Bot: bot.Login, Repo: repo, QueueFile: filepath.Join(data, "journal.queue"), Log: zerolog.Nop()})

	const secret = "s3cret-token-0123456789"
	led := &recorded{}
	rec := memory.Recorder{Next: led, For: func(string, string) *memory.Journal { return j }, Redactor: redact.New(secret)}
	if err := rec.Append(record(12, 13, ledger.ReasonMerged, "", "pull request #13 merged with "+secret)); err != nil {
		t.Fatal(err)
	}
	proxy.FailNext(1000, 503)
	if err := j.Drain(t.Context()); err == nil {
		t.Fatal("the journal was written through a forge that refuses everything")
	}
	if err := rec.Append(record(14, 0, ledger.ReasonBlocked, ledger.CodeCIExhausted, "CI kept failing")); err != nil {
		t.Fatal(err)
	}
	if st := j.Status(); st.Queued != 2 || st.Failing == "" {
		t.Fatalf("status while the forge refuses: %+v", st)
	}
	proxy.Reset()
	if err := j.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := j.Status(); st.Queued != 0 || st.Failing != "" || st.Last.IsZero() {
		t.Fatalf("status after the drain: %+v", st)
	}
	f, err := bot.Client.Repo(bot.Login, ".profile").GetFile(t.Context(), "journal/2026-12-01.md", "main")
	if err != nil {
		t.Fatal(err)
	}
	text := string(f.Content)
	for _, want := range []string{"issue #12, pull request #13, merged", "issue #14, blocked (ci.exhausted)", "$0.25, 3 turns"} {
		if !strings.Contains(text, want) {
			t.Errorf("journal lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, secret) {
		t.Error("a secret reached the journal")
	}
	if strings.Index(text, "#12") > strings.Index(text, "#14") {
		t.Error("entries out of order")
	}
	if len(led.recs) != 2 {
		t.Errorf("the ledger got %d records, want 2", len(led.recs))
	}
}

// TestRecorderNeverFailsForTheJournal: a journal that cannot even queue
// does not fail the run's record; a ledger that fails does.
func TestRecorderNeverFailsForTheJournal(t *testing.T) {
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	j := memory.New(memory.Options{Bot: "dev-bot", QueueFile: filepath.Join(blocked, "queue"), Log: zerolog.Nop()})
	rec := memory.Recorder{Next: &recorded{}, For: func(string, string) *memory.Journal { return j }, Log: zerolog.Nop()}
	if err := rec.Append(record(1, 0, ledger.ReasonMerged, "", "")); err != nil {
		t.Fatalf("a broken journal failed the record: %v", err)
	}
	rec.Next = &recorded{err: errors.New("disk full")}
	if err := rec.Append(record(1, 0, ledger.ReasonMerged, "", "")); err == nil {
		t.Fatal("a failing ledger was not reported")
	}
}

type recorded struct {
	recs []ledger.Record
	err  error
}

func (r *recorded) Append(rec ledger.Record) error {
	if r.err != nil {
		return r.err
	}
	r.recs = append(r.recs, rec)
	return nil
}

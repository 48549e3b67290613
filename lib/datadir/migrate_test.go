package datadir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/datadir"
)

// oldLayout writes a data dir the way the layout before this package
// left it: each ops checkout where its user kept it, and the queued
// state every layout keeps in place.
func oldLayout(t *testing.T, root string) {
	t.Helper()
	checkout := func(rel, repo string) {
		writeFile(t, root, filepath.Join(rel, ".git", "config"),
			"[remote \"origin\"]\n\turl = http://forge:3000/"+repo+".git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n")
		writeFile(t, root, filepath.Join(rel, ".git", "HEAD"), "ref: refs/heads/main\n")
	}
	checkout("ops/widgets", "acme/widgets-ops")
	checkout("vault/widgets/ops", "acme/widgets-ops")
	checkout("vault/widgets/cli-ops", "acme/widgets-ops")
	checkout("vault/widgets/predictor-ops", "acme/widgets-ops")
	checkout("vault/widgets/dev-ops", "acme/widgets-ops")
	checkout("vault/widgets/dev-ops-llama", "acme/widgets-ops")
	checkout("vault/widgets/mirror-clone", "acme/widgets")
	checkout("vault/retired/ops", "acme/retired-ops")
	checkout("clones/widgets/planner-bot-ops", "acme/widgets-ops")
	checkout("clones/widgets/architect-bot-ops", "acme/widgets-ops")
	checkout("clones/widgets/dev-bot", "acme/widgets")
	checkout("clones/widgets/lane-ops", "acme/widgets") // a bot whose login ends in -ops
	checkout("review/widgets/clone", "acme/widgets")
	checkout("memory/dev-bot/profile", "dev-bot/.profile")
	writeFile(t, root, "memory/dev-bot/journal.queue", "{\"entry\":1}\n{\"entry\":2}\n")
	writeFile(t, root, "ledger/2026-05.ndjson", "{\"reason\":\"merged\"}\n")
	writeFile(t, root, "state/widgets/issue-7/phase", "PHASE:awaiting_ci\n")
	writeFile(t, root, "state/widgets/review/pr-3.json", "{}\n")
	writeFile(t, root, "agents.json", "{\"paused\":[]}\n")
	writeFile(t, root, "schedule.json", "{}\n")
	writeFile(t, root, "instance", "0123456789abcdef0123456789abcdef\n")
}

func writeFile(t *testing.T, root, rel, data string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o640); err != nil {
		t.Fatal(err)
	}
}

var owners = []datadir.Owners{{Project: "widgets", OpsRepo: "acme/widgets-ops", DevBot: "dev-bot", VaultBot: "vault-bot"}}

// TestMigrateOlderLayout migrates a data dir of the older layout: one
// ops checkout per project and identity is left, the queued state and
// everything else stay, and a second run changes nothing.
func TestMigrateOlderLayout(t *testing.T) {
	root := t.TempDir()
	oldLayout(t, root)
	l := datadir.New(root)
	moves, err := l.Migrate(owners)
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 9 {
		t.Errorf("moves = %d, want 9: %v", len(moves), moves)
	}
	isCheckout := func(dir, repo string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
		if err != nil || !contains(string(data), "/"+repo+".git") {
			t.Errorf("%s: not a checkout of %s (%v)", dir, repo, err)
		}
	}
	isCheckout(l.Ops("widgets", "dev-bot"), "acme/widgets-ops")
	isCheckout(l.Ops("widgets", "vault-bot"), "acme/widgets-ops")
	isCheckout(l.CLIOps("widgets", "vault-bot"), "acme/widgets-ops")
	isCheckout(l.Ops("widgets", "planner-bot"), "acme/widgets-ops")
	isCheckout(l.Ops("widgets", "architect-bot"), "acme/widgets-ops")
	isCheckout(l.MirrorClone("widgets"), "acme/widgets")
	isCheckout(l.Clone("widgets", "dev-bot"), "acme/widgets")
	isCheckout(l.Clone("widgets", "lane-ops"), "acme/widgets")
	isCheckout(l.ReviewClone("widgets"), "acme/widgets")
	isCheckout(l.Profile("dev-bot"), "dev-bot/.profile")
	for _, gone := range []string{"vault/widgets/ops", "vault/widgets/cli-ops", "vault/widgets/predictor-ops", "vault/widgets/dev-ops",
		"vault/widgets/dev-ops-llama", "vault/retired/ops", "clones/widgets/planner-bot-ops", "clones/widgets/architect-bot-ops",
		"ops/.widgets.old", "ops/widgets/.git"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); err == nil {
			t.Errorf("%s is still there", gone)
		}
	}
	same := func(path, want string) {
		t.Helper()
		if data, err := os.ReadFile(path); err != nil || string(data) != want {
			t.Errorf("%s = %q, %v; want %q", path, data, err, want)
		}
	}
	same(l.JournalQueue("dev-bot"), "{\"entry\":1}\n{\"entry\":2}\n")
	same(filepath.Join(l.Ledger(), "2026-05.ndjson"), "{\"reason\":\"merged\"}\n")
	same(filepath.Join(l.Issue("widgets", "7"), "phase"), "PHASE:awaiting_ci\n")
	same(filepath.Join(l.RoleState("widgets", config.RoleReview), "pr-3.json"), "{}\n")
	same(l.Enablement(), "{\"paused\":[]}\n")
	same(l.Schedule(), "{}\n")
	same(l.Instance(), "0123456789abcdef0123456789abcdef\n")

	again, err := l.Migrate(owners)
	if err != nil || len(again) != 0 {
		t.Errorf("second run: %v, %v; want nothing", again, err)
	}
}

// TestMigrateFinishesACutRun finishes a move of the daemon's checkout
// cut short between its two renames, and discards one whose owner is no
// longer known.
func TestMigrateFinishesACutRun(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "ops/.widgets.old/.git/HEAD", "ref: refs/heads/main\n")
	writeFile(t, root, "ops/.retired.old/.git/HEAD", "ref: refs/heads/main\n")
	l := datadir.New(root)
	if _, err := l.Migrate(owners); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(l.Ops("widgets", "dev-bot"), ".git", "HEAD")); err != nil {
		t.Errorf("the cut move was not finished: %v", err)
	}
	for _, gone := range []string{"ops/.widgets.old", "ops/.retired.old", "ops/retired"} {
		if _, err := os.Lstat(filepath.Join(root, gone)); err == nil {
			t.Errorf("%s is still there", gone)
		}
	}
}

// TestMigrateEmpty is a new data dir: nothing to do.
func TestMigrateEmpty(t *testing.T) {
	moves, err := datadir.New(filepath.Join(t.TempDir(), "data")).Migrate(owners)
	if err != nil || len(moves) != 0 {
		t.Errorf("Migrate = %v, %v", moves, err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

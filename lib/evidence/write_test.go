package evidence_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/edge"
	"github.com/disinto/disinto/lib/evidence"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

var gitea forgetest.Shared

func TestMain(m *testing.M) { os.Exit(forgetest.Main(m, &gitea)) }

// activity is a day of a project on the real forge: two pull requests
// by the dev bot, one red then green with changes requested then an
// approval by the review bot, one pending with a comment of the review
// bot and an approval of the owner's (not the review bot's, so not
// counted).
func activity(t *testing.T, srv *forgetest.Server) forgetest.Project {
	t.Helper()
	ctx := t.Context()
	p := srv.NewProject(t, "evid")
	as := func(u forgetest.User) *forge.RepoClient { return u.Client.Repo(p.Repo.Owner(), p.Repo.Name()) }
	dev, rev := as(p.Dev), as(p.Reviewer)
	push := func(branch, path, content string) string {
		t.Helper()
		if err := dev.CreateFiles(ctx, branch, "add "+path, []forge.NewFile{{Path: path, Content: []byte(content)}}); err != nil {
			t.Fatal(err)
		}
		b, err := dev.GetBranch(ctx, branch)
		if err != nil {
			t.Fatal(err)
		}
		return b.SHA
	}
	status := func(sha string, st forge.CIState) {
		t.Helper()
		if err := dev.CreateStatus(ctx, sha, forge.CommitStatus{Context: "ci/test", State: st}); err != nil {
			t.Fatal(err)
		}
	}
	review := func(c *forge.RepoClient, n int64, sha string, ev forge.ReviewEvent) {
		t.Helper()
		if _, err := c.CreateReview(ctx, n, forge.NewReview{Event: ev, CommitID: sha, Body: "review " + string(ev)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []string{"fix-a", "fix-b"} {
		if _, err := dev.CreateBranch(ctx, b, "main"); err != nil {
			t.Fatal(err)
		}
	}
	// Every commit is pushed before its pull request opens: a push to
	// the head of an open pull request is slow on a loaded forge.
	a1 := push("fix-a", "a.txt", "one\n")
	a2 := push("fix-a", "a2.txt", "two\n")
	b1 := push("fix-b", "b.txt", "b\n")
	prA, err := dev.CreatePull(ctx, forge.NewPull{Title: "Fix a", Head: "fix-a", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	status(a1, forge.CIFailure)
	review(rev, prA.Number, a1, forge.ReviewRequestChanges)
	status(a2, forge.CISuccess)
	review(rev, prA.Number, a2, forge.ReviewApprove)

	prB, err := dev.CreatePull(ctx, forge.NewPull{Title: "Fix b", Head: "fix-b", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	status(b1, forge.CIPending)
	review(rev, prB.Number, b1, forge.ReviewComment)
	review(as(p.Owner), prB.Number, b1, forge.ReviewApprove)
	return p
}

// opsCheckout is a checkout of a new ops repository of the project's
// owner, acting as the owner.
func opsCheckout(t *testing.T, srv *forgetest.Server, p forgetest.Project) (*ops.Repo, *forge.RepoClient) {
	t.Helper()
	repo := srv.NewRepo(t, p.Owner, "evid-ops")
	g := git.New(git.Options{Env: []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"},
		Credentials: &git.Credentials{URL: srv.URL, Username: p.Owner.Login, Password: p.Owner.Password}})
	name, email := git.Identity(p.Owner.Login)
	return ops.Open(ops.Options{Git: g, URL: srv.URL + "/" + repo.Slug() + ".git", Dir: filepath.Join(t.TempDir(), "ops"),
		Name: name, Email: email}), repo
}

// accessLog writes an access log of the edge with requests of today.
func accessLog(t *testing.T, now time.Time) string {
	t.Helper()
	var lines []string
	for i, uri := range []string{"/chat/login", "/chat", "/chat/c/1", "/o/r/issues", "/o/r", "/factory/"} {
		status := 200
		if i == 2 {
			status = 502
		}
		lines = append(lines, fmt.Sprintf(`{"level":"info","ts":%d.1,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"10.0.0.%d","uri":%q},"status":%d}`,
			now.Unix()-int64(i), i%2, uri, status))
	}
	path := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sum adds up, over every day of text, the numbers after each label.
func sum(text string, labels ...string) map[string]int {
	out := map[string]int{}
	for _, l := range labels {
		for _, m := range regexp.MustCompile(regexp.QuoteMeta(l)+` (\d+)`).FindAllStringSubmatch(text, -1) {
			n, _ := strconv.Atoi(m[1])
			out[l] += n
		}
	}
	return out
}

// TestWriteAfterADay is the acceptance of the evidence: after a day of
// activity on the real forge, the three files are in the ops repository
// with what happened, a rerun the same day commits nothing, and a month
// later the window has rolled and every file is within its bounds.
func TestWriteAfterADay(t *testing.T) {
	if testing.Short() {
		t.Skip("real Gitea")
	}
	srv := gitea.Get(t)
	p := activity(t, srv)
	repo, opsForge := opsCheckout(t, srv, p)
	now := time.Now()
	clock := func() time.Time { return now }
	o := evidence.Options{Forge: p.Repo, Reviewer: p.Reviewer.Login, AccessLog: accessLog(t, now),
		Routes: edge.Config{}.Routes(), Now: clock}
	ctx := t.Context()

	res, err := evidence.Write(ctx, repo, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit == "" || !res.Engagement || res.Skipped != 1 {
		t.Fatalf("first write: %+v, want a commit, the access log read and its torn line skipped", res)
	}
	file := func(path string) string {
		t.Helper()
		f, err := opsForge.GetFile(ctx, path, "main")
		if err != nil {
			t.Fatalf("%s on the ops repository: %v", path, err)
		}
		if len(f.Content) > evidence.DefaultMaxBytes {
			t.Errorf("%s is %d bytes, over the cap", path, len(f.Content))
		}
		return string(f.Content)
	}
	ci := file(evidence.CIPath)
	if got := sum(ci, "commits checked:", "green", "red", "pending"); got["commits checked:"] != 3 || got["green"] != 1 || got["red"] != 1 || got["pending"] != 1 {
		t.Errorf("ci.md counts %v, want 3 commits: 1 green, 1 red, 1 pending:\n%s", got, ci)
	}
	if !strings.Contains(ci, "ci/test: failure") {
		t.Errorf("ci.md does not name the red pull request's failing check:\n%s", ci)
	}
	reviews := file(evidence.ReviewsPath)
	if got := sum(reviews, "reviews:", "approved", "changes requested", "comments"); got["reviews:"] != 3 || got["approved"] != 1 ||
		got["changes requested"] != 1 || got["comments"] != 1 {
		t.Errorf("reviews.md counts %v, want the review bot's 3: 1 approval, 1 change request, 1 comment:\n%s", got, reviews)
	}
	if !strings.Contains(reviews, "round 2: approved") {
		t.Errorf("reviews.md does not say the approval was the second round:\n%s", reviews)
	}
	eng := file(evidence.EngagementPath)
	for _, want := range []string{"| chat-login | 1 | 0 | 0 | 1 |", "| chat | 2 | 0 | 1 | 2 |", "| factory | 1 |", "| forge | 2 |"} {
		if !strings.Contains(eng, want) {
			t.Errorf("engagement.md lacks %q:\n%s", want, eng)
		}
	}

	head, err := opsForge.GetBranch(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	again, err := evidence.Write(ctx, repo, o)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := opsForge.GetBranch(ctx, "main"); again.Commit != "" || after.SHA != head.SHA {
		t.Errorf("a rerun the same day committed %q (head %s, was %s)", again.Commit, after.SHA, head.SHA)
	}

	// A month and more later: the days have left the window.
	later := now.AddDate(0, 0, evidence.DefaultDays+1)
	o.Now = func() time.Time { return later }
	o.AccessLog = filepath.Join(t.TempDir(), "rolled-away.log")
	if res, err = evidence.Write(ctx, repo, o); err != nil {
		t.Fatal(err)
	}
	if res.Commit == "" || res.Engagement {
		t.Errorf("write a month later: %+v, want a commit and no access log", res)
	}
	for _, path := range evidence.Paths {
		text := file(path)
		if days := evidence.ParseDays(text); len(days) != 0 {
			t.Errorf("%s keeps %d days older than the window:\n%s", path, len(days), text)
		}
	}
}

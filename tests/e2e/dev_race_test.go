package e2e

import (
	"sync"
	"testing"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
)

// TestDevClaimRace runs two daemons (two bot users, two data dirs) on one
// project: no issue is ever worked by both.
func TestDevClaimRace(t *testing.T) {
	t.Parallel()
	e := newDevEnv(t, claudetest.Scenario{Name: "dev-race", Turns: fixTurns(0)})
	bots := []*devBot{e.newBot("dev-bot"), e.newBot("dev-qwen")}
	// As in a daemon, each knows the other's login as a factory identity:
	// claim comments count only from those.
	logins := []string{bots[0].user.Login, bots[1].user.Login}
	for _, b := range bots {
		b.rebuild(func(o *dev.Options) { o.BotUsernames = logins })
	}
	var issues []int64
	for i := 0; i < 3; i++ {
		issues = append(issues, e.issue("Race", "scenario: dev-race", forge.LabelBacklog))
	}
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		for _, b := range bots {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.tick()
			}()
		}
		wg.Wait()
	}
	worked := 0
	for _, n := range issues {
		owners := 0
		for _, b := range bots {
			if b.stage(n) != "" {
				owners++
			}
		}
		if owners > 1 {
			t.Fatalf("issue #%d worked by both daemons", n)
		}
		if ps := e.pullsFor(branch(n)); len(ps) > 1 {
			t.Fatalf("issue #%d has %d pull requests", n, len(ps))
		}
		i := e.getIssue(n)
		if len(i.Assignees) > 1 {
			t.Fatalf("issue #%d assigned to %v", n, i.Assignees)
		}
		if owners == 1 {
			worked++
		}
	}
	// Each daemon holds one issue at a time: both got work.
	if worked != 2 {
		t.Fatalf("%d issues in progress, want 2 (one per daemon)", worked)
	}
}

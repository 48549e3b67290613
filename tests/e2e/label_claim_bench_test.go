package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/disinto/disinto/agents/dev"
	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/scheduler"
	"github.com/disinto/disinto/lib/webhook"
)

// heldRunner is a model session that lasts until its context ends: the
// benchmark below measures up to the claim, not the work after it.
type heldRunner struct{}

func (heldRunner) Run(ctx context.Context, _ claude.Invocation) (claude.Result, error) {
	<-ctx.Done()
	return claude.Result{}, ctx.Err()
}

// BenchmarkLabelToClaim measures, on a real Gitea, the time from a human
// adding the backlog label to an issue to the dev agent's claim (the
// issue's assignee) visible on the forge, through the daemon's event
// path: the forge's webhook, the HMAC-verified receiver, the scheduler's
// trigger with its production debounce, and a dev tick that claims. It
// reports the median. Target: at most 1 s. Run:
// go test -run '^$' -bench LabelToClaim -benchtime 7x ./tests/e2e/
func BenchmarkLabelToClaim(b *testing.B) {
	e := newDevEnv(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	u := e.srv.NewUser(b, "dev-bot")
	if err := e.repo.AddCollaborator(ctx, u.Login, forge.PermWrite); err != nil {
		b.Fatal(err)
	}
	bot := startBot(b, botParams{ForgeURL: e.srv.URL, Owner: e.repo.Owner(), Repo: e.repo.Name(), Login: u.Login, Password: u.Password,
		Token: u.Token, ModelURL: e.modelURL, Data: b.TempDir(), ReviewBot: e.reviewer.Login, Mirror: e.mirror})
	// Every claimed issue holds a session: room for all of them.
	bot.rebuild(func(o *dev.Options) { o.Claude, o.Limits.InFlight = heldRunner{}, 1<<20 })
	bot.tick() // resolves the identity

	sched := scheduler.New(scheduler.Options{Log: logx.Nop()}) // production clock and debounce
	err := sched.Add(scheduler.Job{Project: bot.proj.Name, Role: string(config.RoleDev), Interval: time.Hour,
		FirstRun: scheduler.FirstRunAfterInterval, Run: func(ctx context.Context, tk scheduler.Tick) error {
			cause := agent.CauseSchedule
			if tk.Cause == scheduler.CauseTrigger {
				cause = agent.CauseEvent
			}
			return bot.rt.Tick(ctx, bot.a, bot.proj, config.RoleDev, cause)
		}})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = sched.Run(ctx, ctx); close(done) }()
	defer func() { cancel(); <-done; _ = bot.rt.Wait(context.Background()) }()

	secret := []byte("label-to-claim")
	h, err := webhook.New(webhook.Options{Secret: secret, Projects: map[string][]string{e.repo.Slug(): {bot.proj.Name}},
		Trigger: sched, Log: logx.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+webhook.Path, h)
	recv := httptest.NewServer(mux)
	defer recv.Close()
	events := []string{"issues", "issue_label", "issue_comment", "pull_request", "pull_request_review", "status"}
	if _, err := e.repo.CreateWebhook(ctx, forge.NewWebhook{URL: recv.URL + webhook.Path, Secret: string(secret), Events: events}); err != nil {
		b.Fatal(err)
	}

	var took []time.Duration
	for i := range b.N {
		b.StopTimer()
		in, err := e.repo.CreateIssue(ctx, forge.NewIssue{Title: fmt.Sprintf("change %d", i), Body: "Make a change."})
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(2 * time.Second) // the opening's own event and tick pass
		b.StartTimer()
		start := time.Now()
		if err := e.repo.AddLabels(ctx, in.Number, forge.LabelBacklog); err != nil {
			b.Fatal(err)
		}
		for {
			cur, err := e.repo.GetIssue(ctx, in.Number)
			if err != nil {
				b.Fatal(err)
			}
			if cur.AssignedTo(u.Login) {
				break
			}
			if time.Since(start) > time.Minute {
				b.Fatalf("issue #%d not claimed a minute after its label", in.Number)
			}
			time.Sleep(10 * time.Millisecond)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "ms-median/label-to-claim")
	b.ReportMetric(float64(took[len(took)-1].Milliseconds()), "ms-max/label-to-claim")
}

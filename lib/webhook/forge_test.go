package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/scheduler"
	"github.com/disinto/disinto/lib/webhook"
)

// hookRig is a real Gitea repository whose webhooks reach a real receiver
// in front of a real scheduler with one dev job.
type hookRig struct {
	repo     *forge.RepoClient
	url      string
	ran      chan scheduler.Tick
	mu       sync.Mutex
	observed map[string]int
}

func newHookRig(t testing.TB, ctx context.Context) *hookRig {
	t.Helper()
	srv := forgetest.Start(t)
	owner := srv.NewUser(t, "owner")
	repo := srv.NewRepo(t, owner, "hooked")
	if _, err := repo.EnsureLabels(ctx); err != nil {
		t.Fatal(err)
	}
	rig := &hookRig{repo: repo, ran: make(chan scheduler.Tick, 16), observed: map[string]int{}}

	sched := scheduler.New(scheduler.Options{Log: logx.Nop()}) // production clock and debounce
	err := sched.Add(scheduler.Job{Project: "alpha", Role: "dev", Interval: time.Hour, FirstRun: scheduler.FirstRunAfterInterval,
		Run: func(_ context.Context, tk scheduler.Tick) error { rig.ran <- tk; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = sched.Run(runCtx, runCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })

	h, err := webhook.New(webhook.Options{
		Secret: secret, Projects: map[string][]string{repo.Slug(): {"alpha"}}, Trigger: sched, Log: logx.Nop(),
		Observe: func(_, result string) { rig.mu.Lock(); rig.observed[result]++; rig.mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+webhook.Path, h)
	recv := httptest.NewServer(mux)
	t.Cleanup(recv.Close)
	rig.url = recv.URL + webhook.Path
	return rig
}

func (r *hookRig) count(result string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.observed[result]
}

func TestForgeLabelWakesDev(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rig := newHookRig(t, ctx)
	issue, err := rig.repo.CreateIssue(ctx, forge.NewIssue{Title: "add a feature", Body: "details"})
	if err != nil {
		t.Fatal(err)
	}
	events := []string{"issues", "issue_label", "issue_comment", "pull_request", "pull_request_review", "status"}
	if _, err := rig.repo.CreateWebhook(ctx, forge.NewWebhook{URL: rig.url, Secret: string(secret), Events: events}); err != nil {
		t.Fatal(err)
	}
	// A webhook with the wrong secret: its deliveries must be rejected.
	if _, err := rig.repo.CreateWebhook(ctx, forge.NewWebhook{URL: rig.url, Secret: "wrong", Events: events}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := rig.repo.AddLabels(ctx, issue.Number, forge.LabelBacklog); err != nil {
		t.Fatal(err)
	}
	select {
	case tk := <-rig.ran:
		if tk.Cause != scheduler.CauseTrigger {
			t.Fatalf("dev ran for %s, want a trigger", tk.Cause)
		}
		t.Logf("dev job triggered %v after labelling", time.Since(start).Round(time.Millisecond))
	case <-ctx.Done():
		t.Fatal("labelling the issue did not trigger the dev job")
	}
	waitFor := func(what string, cond func() bool) {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for !cond() {
			select {
			case <-tick.C:
			case <-ctx.Done():
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("the badly signed delivery", func() bool { return rig.count("unauthorized") >= 1 })
	if rig.count("accepted") < 1 {
		t.Fatalf("deliveries: %v", rig.observed)
	}
}

// BenchmarkForgeLabelToDev measures the time from labelling an issue on a
// real Gitea to the dev job starting (webhook delivery + the 50ms settle
// of a lone trigger).
func BenchmarkForgeLabelToDev(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rig := newHookRig(b, ctx)
	if _, err := rig.repo.CreateWebhook(ctx, forge.NewWebhook{URL: rig.url, Secret: string(secret), Events: []string{"issue_label"}}); err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		issue, err := rig.repo.CreateIssue(ctx, forge.NewIssue{Title: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := rig.repo.AddLabels(ctx, issue.Number, forge.LabelBacklog); err != nil {
			b.Fatal(err)
		}
		select {
		case <-rig.ran:
		case <-ctx.Done():
			b.Fatal("no trigger")
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/label-to-dev")
}

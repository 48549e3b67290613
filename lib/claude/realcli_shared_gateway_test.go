package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/claude"
	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/gateway"
)

// childEnv hands a child process of TestTwoProcessesShareOneGateway its
// part: the shared gateway and the scenario its session plays.
const childEnv = "DISINTO_TEST_GATEWAY_CHILD"

type childPart struct {
	URL, Token, Prompt string
}

// TestTwoProcessesShareOneGateway: two processes that run sessions of the
// real CLI share one gateway whose backend takes one request at a time.
// Both sessions meet at a barrier after their first answer, so both ask
// again at once; the backend still never sees two requests in flight, and
// both sessions finish.
func TestTwoProcessesShareOneGateway(t *testing.T) {
	t.Parallel()
	barrier := t.TempDir()
	meet := fmt.Sprintf(`touch %s/ready-$$; for i in $(seq 200); do [ "$(ls %s | wc -l)" -ge 2 ] && break; sleep 0.05; done; echo met`, barrier, barrier)
	srv, err := claudetest.NewServer(claudetest.Scenario{Name: "shared", Turns: []claudetest.Turn{
		claudetest.Tools(claudetest.Bash(meet)), claudetest.Tools(claudetest.Bash("echo two")), claudetest.Text("done"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	var inFlight, maxSeen, total atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := maxSeen.Load(); n > m && !maxSeen.CompareAndSwap(m, n); m = maxSeen.Load() {
		}
		total.Add(1)
		time.Sleep(400 * time.Millisecond) // long enough for the other session's request to arrive
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(model.Close)
	const admin = "shared-gateway-admin-0123456789"
	g, err := gateway.New(gateway.Options{Backends: []gateway.Backend{{Name: "scripted", URL: model.URL, APIKey: "sk-test-not-a-real-key", MaxConcurrent: 1}},
		Log: zerolog.Nop(), AdminToken: admin})
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g)
	t.Cleanup(gw.Close)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 2 {
		part, _ := json.Marshal(childPart{URL: gw.URL, Token: admin, Prompt: "scenario: shared\nWork, process " + fmt.Sprint(i)})
		wg.Go(func() {
			cmd := exec.Command(self, "-test.run=^TestSharedGatewayChild$", "-test.v")
			cmd.Env = append(os.Environ(), childEnv+"="+string(part))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("process %d: %v\n%s", i, err, out)
			}
		})
	}
	wg.Wait()
	if maxSeen.Load() != 1 || total.Load() < 6 {
		t.Errorf("the backend saw %d requests at once (of %d), want 1", maxSeen.Load(), total.Load())
	}
	if ready, _ := os.ReadDir(barrier); len(ready) != 2 {
		t.Errorf("%d sessions met at the barrier, want 2", len(ready))
	}
}

// TestSharedGatewayChild is one process of TestTwoProcessesShareOneGateway:
// it runs one session of the real CLI on keys of the shared gateway.
func TestSharedGatewayChild(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		t.Skip("a child process of TestTwoProcessesShareOneGateway")
	}
	var part childPart
	if err := json.Unmarshal([]byte(raw), &part); err != nil {
		t.Fatal(err)
	}
	e, err := claude.New(claude.Options{
		Bin: claudetest.RequireCLI(t), Backends: []claude.Backend{{Name: "scripted", BaseURL: "http://backend.invalid"}}, BaseEnv: claudetest.Env(t),
		IdleGrace: 30 * time.Second, Timeout: 3 * time.Minute, TranscriptDir: t.TempDir(),
		Gateway: &gateway.Remote{URL: part.URL, Token: part.Token}, GatewayURL: part.URL,
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background(), claude.Invocation{Prompt: part.Prompt, Dir: gitRepo(t), MaxTurns: 6, Label: "dev-issue-" + filepath.Base(t.TempDir())})
	if err != nil || !res.Success() || res.Usage.InputTokens == 0 {
		t.Fatalf("run: %v %+v", err, res)
	}
}

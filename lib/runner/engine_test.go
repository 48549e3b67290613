package runner_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/disinto/disinto/lib/runner"
	"github.com/disinto/disinto/lib/runner/runnertest"
)

// The engine tests run against a real Docker engine (Debian's docker.io)
// and the runner image built from docker/runner through the API.
const (
	setupHint = runnertest.SetupHint
	// testImage is the runner image these tests build and run.
	testImage = "disinto-test/runner:test"
	// testLabel marks one test's containers, so each test can prove it
	// left none behind while others run.
	testLabel = "org.disinto.test.run"
)

// engine returns a client of the local engine, failing with the setup
// instruction when none answers; skipped only under -short.
func engine(t *testing.T) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("runner engine test: skipped under -short")
	}
	return runnertest.Engine(t)
}

var (
	buildOnce sync.Once
	buildErr  error
)

// runnerImage builds the runner image once per test binary, through the
// engine API with the module as context.
func runnerImage(t *testing.T, cli *client.Client) string {
	t.Helper()
	buildOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		buildErr = runnertest.Build(ctx, cli, filepath.Join("..", ".."), testImage)
	})
	if buildErr != nil {
		t.Fatalf("build %s: %v (%s)", testImage, buildErr, setupHint)
	}
	return testImage
}

// newRunner is a runner on the test image whose containers carry a label
// of this test alone, and a check at the end that none of them is left.
func newRunner(t *testing.T, cli *client.Client, o runner.Options) *runner.Launcher {
	t.Helper()
	r, _ := newLabelledRunner(t, cli, o)
	return r
}

// newLabelledRunner is newRunner that also returns the test label's value.
func newLabelledRunner(t *testing.T, cli *client.Client, o runner.Options) (*runner.Launcher, string) {
	t.Helper()
	o.Engine = cli
	o.Image = runnerImage(t, cli)
	run := randomHex(t)
	o.Labels = map[string]string{testLabel: run}
	r, err := runner.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if left := listContainers(ctx, t, cli, run); len(left) > 0 {
			t.Errorf("containers left behind: %v", left)
			_, _ = r.Reap(ctx)
		}
	})
	return r, run
}

// listContainers lists the ids of every container, running or not, with
// the test's label value run.
func listContainers(ctx context.Context, t *testing.T, cli *client.Client, run string) []string {
	t.Helper()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: client.Filters{}.Add("label", testLabel+"="+run),
	})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

// requireRemoved fails unless the container id is gone.
func requireRemoved(t *testing.T, cli *client.Client, id string) {
	t.Helper()
	if id == "" {
		t.Fatal("outcome names no container")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if !cerrdefs.IsNotFound(err) {
		t.Fatalf("container %s still exists after Run (inspect: %v)", id, err)
	}
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

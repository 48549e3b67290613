package reproduce

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"

	"github.com/disinto/disinto/lib/runner/runnertest"
)

// The sidecar tests run on the real Docker engine (Debian's docker.io),
// with the runner and reproduce images built from docker/ through the
// API from the local mmdebstrap base (tests/setup/docker.sh).
const (
	setupHint = "run tests/setup/docker.sh as root (starts Debian's Docker engine, builds the local debian:bookworm-slim from mmdebstrap)"
	// The images these tests build.
	testRunnerImage    = "repro-test/runner:test"
	testReproduceImage = "repro-test/reproduce:test"
	// testLabel marks one test's containers.
	testLabel = "org.disinto.test.reproduce"
)

// engine returns a client of the local engine, failing with the setup
// instruction when none answers; skipped only under -short.
func engine(t *testing.T) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("sidecar engine test: skipped under -short")
	}
	return runnertest.Engine(t)
}

var (
	buildOnce sync.Once
	buildErr  error
)

// dockerfilesLabel holds the hash of the two Dockerfiles an image was
// built from (tests/setup/reproduce.sh sets it the same way).
const dockerfilesLabel = "org.disinto.test.dockerfiles"

// reproduceImage returns the reproduce image, built from docker/runner
// and docker/reproduce on it once per test binary unless the engine holds
// one of the same Dockerfiles already (tests/setup/reproduce.sh).
func reproduceImage(t *testing.T, cli *client.Client) string {
	t.Helper()
	buildOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		root := filepath.Join("..", "..", "docker")
		hash, err := dockerfilesHash(filepath.Join(root, "runner", "Dockerfile"), filepath.Join(root, "reproduce", "Dockerfile"))
		if err != nil {
			buildErr = err
			return
		}
		if img, err := cli.ImageInspect(ctx, testReproduceImage); err == nil && img.Config != nil && img.Config.Labels[dockerfilesLabel] == hash {
			return
		}
		labels := map[string]string{"org.disinto.test-standin": "true", dockerfilesLabel: hash}
		// The runner image's context is the module's root (it builds the
		// disinto binary); the builder's cache makes an unchanged tree cheap.
		if buildErr = runnertest.Build(ctx, cli, filepath.Join("..", ".."), testRunnerImage); buildErr != nil {
			return
		}
		runnerImage := testRunnerImage
		buildErr = buildImage(ctx, cli, filepath.Join(root, "reproduce"), testReproduceImage,
			map[string]*string{"RUNNER_IMAGE": &runnerImage}, labels)
	})
	if buildErr != nil {
		t.Fatalf("build %s: %v (%s)", testReproduceImage, buildErr, setupHint)
	}
	return testReproduceImage
}

// buildImage builds the Dockerfile in dir as tag with the classic builder
// (no registry is reachable: base images must be local).
func buildImage(ctx context.Context, cli *client.Client, dir, tag string, args map[string]*string, labels map[string]string) error {
	buildCtx, err := tarDir(dir)
	if err != nil {
		return err
	}
	res, err := cli.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{
		Tags: []string{tag}, Dockerfile: "Dockerfile", Remove: true, ForceRemove: true,
		Version: build.BuilderV1, BuildArgs: args, Labels: labels,
	})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	var tailLog []string
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if msg.Stream != "" {
			tailLog = append(tailLog, msg.Stream)
			if len(tailLog) > 20 {
				tailLog = tailLog[1:]
			}
		}
		if msg.Error != "" {
			return errors.New(msg.Error + "\n" + strings.Join(tailLog, ""))
		}
	}
}

// dockerfilesHash is the hex sha256 of the files, one after the other.
func dockerfilesHash(files ...string) (string, error) {
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// tarDir is the tar archive of the regular files under dir.
func tarDir(dir string) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &buf, tw.Close()
}

// serve serves h on ln until the test ends and returns its base URL.
func serve(t *testing.T, ln net.Listener, h http.Handler) string {
	t.Helper()
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

// listContainers lists the containers carrying the test label value run.
func listContainers(t *testing.T, cli *client.Client, run string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: client.Filters{}.Add("label", testLabel+"="+run)})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

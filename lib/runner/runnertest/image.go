// Package runnertest builds the runner image (docker/runner/Dockerfile)
// for the tests that run jobs in it, through the engine API with the
// classic builder: the machine reaches no registry, so the Dockerfile's
// base and Go images are the local stand-ins tests/setup/docker.sh makes.
package runnertest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
)

// Dockerfile is the runner image's Dockerfile, relative to the module's
// root, which is its build context (as for docker/agents).
const Dockerfile = "docker/runner/Dockerfile"

// SetupHint says how to get what Build needs.
const SetupHint = "run tests/setup/docker.sh as root (Debian's Docker engine, the local debian:bookworm-slim from mmdebstrap and golang:1.26-bookworm from this machine's Go)"

// skipped are the module's paths the image never needs (the
// .dockerignore's and .gitignore's: local state, built binaries, and the
// tests' own files): leaving them out keeps the context small and lets a
// change to a test alone reuse the cached build.
var skipped = []string{".git", ".env", "data", "state", "tools", "tests", "docker/test", "projects", "bin", "disinto"}

// Context is the runner image's build context: the regular files of the
// module at root, without the skipped paths, test files and test data,
// in a stable order with fixed metadata, so an unchanged tree hits the
// builder's cache.
func Context(root string) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip(rel, d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: 0o644, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("build context %s: %w", root, err)
	}
	return &buf, tw.Close()
}

// skip reports whether the context leaves rel out.
func skip(rel string, d fs.DirEntry) bool {
	if rel == "." {
		return false
	}
	for _, s := range skipped {
		if rel == s || strings.HasPrefix(rel, ".env.") {
			return true
		}
	}
	name := d.Name()
	if d.IsDir() {
		return name == "testdata"
	}
	return strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, ".test") || strings.HasSuffix(name, ".out")
}

// Build builds the runner image from the module at root as tag, labelled
// a test stand-in. A failed step's error carries the build's last lines.
func Build(ctx context.Context, cli *client.Client, root, tag string) error {
	buildCtx, err := Context(root)
	if err != nil {
		return err
	}
	res, err := cli.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{
		Tags: []string{tag}, Dockerfile: Dockerfile, Remove: true, ForceRemove: true,
		Version: build.BuilderV1, Labels: map[string]string{"org.disinto.test-standin": "true"},
	})
	if err != nil {
		return fmt.Errorf("build %s: %w", tag, err)
	}
	defer res.Body.Close()
	// The body is a stream of JSON messages; a failed step sends an error.
	dec := json.NewDecoder(res.Body)
	var last []string
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("build %s: %w", tag, err)
		}
		if msg.Stream != "" {
			last = append(last[max(0, len(last)-19):], msg.Stream)
		}
		if msg.Error != "" {
			return fmt.Errorf("build %s: %s\n%s", tag, msg.Error, strings.Join(last, ""))
		}
	}
}

package dockerx_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/disinto/disinto/lib/dockerx"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Without a socket every call says the engine is unavailable.
func TestNoSocketIsUnavailable(t *testing.T) {
	e, err := dockerx.Open("unix:///nonexistent/docker.sock")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Ping(ctxT(t)); !errors.Is(err, dockerx.ErrUnavailable) {
		t.Fatalf("ping = %v, want ErrUnavailable", err)
	}
	if _, err := e.Containers(ctxT(t), "stack", nil); !errors.Is(err, dockerx.ErrUnavailable) {
		t.Fatalf("containers = %v, want ErrUnavailable", err)
	}
}

// On the real engine: a stack's containers are found by the compose label
// and a listed one by its name, once each; a stopped one starts; the
// stack's volumes are listed with their mount points.
func TestStackContainersAndVolumes(t *testing.T) {
	e, err := dockerx.Open("")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Ping(ctxT(t)); err != nil {
		t.Fatalf("no Docker engine: %v (run tests/setup/docker.sh)", err)
	}
	ctx := ctxT(t)
	stack := "dockerx-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	res, err := e.Client().ContainerCreate(ctx, client.ContainerCreateOptions{Name: stack + "-web",
		Config: &container.Config{Image: "debian:bookworm-slim", Cmd: []string{"sleep", "60"},
			Labels: map[string]string{dockerx.ComposeProjectLabel: stack, "com.docker.compose.service": "web"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.Client().ContainerRemove(ctxT(t), res.ID, client.ContainerRemoveOptions{Force: true}) })
	vol, err := e.Client().VolumeCreate(ctx, client.VolumeCreateOptions{Name: stack + "-data", Labels: map[string]string{dockerx.ComposeProjectLabel: stack}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = e.Client().VolumeRemove(ctxT(t), vol.Volume.Name, client.VolumeRemoveOptions{Force: true})
	})

	cs, err := e.Containers(ctx, stack, []string{stack + "-web", stack + "-missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Name != stack+"-web" || cs[0].Service != "web" || cs[0].Running() {
		t.Fatalf("containers = %+v", cs)
	}
	if err := e.Start(ctx, cs[0].ID); err != nil {
		t.Fatal(err)
	}
	if cs, err = e.Containers(ctx, stack, nil); err != nil || len(cs) != 1 || !cs[0].Running() {
		t.Fatalf("after start: %+v %v", cs, err)
	}
	vs, err := e.Volumes(ctx, stack)
	if err != nil || len(vs) != 1 || vs[0].Name != stack+"-data" || vs[0].Mountpoint == "" {
		t.Fatalf("volumes = %+v %v", vs, err)
	}
	if root, err := e.DataRoot(ctx); err != nil || root == "" {
		t.Fatalf("data root = %q %v", root, err)
	}
}

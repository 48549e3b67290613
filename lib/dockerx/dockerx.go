// Package dockerx is the Docker engine API as the factory uses it, on the
// engine's own Go client (github.com/moby/moby/client): the containers of a
// compose stack and the ones a project names, their state and health,
// starting a stopped one, the engine's data root and named volumes, and the
// two prunes that never touch what the stack uses (dangling images and
// the builder cache). It never runs the docker CLI.
//
// The engine socket is root-equivalent: whoever can talk to it can start a
// privileged container. The daemon reaches it only when the operator opts
// in (the compose profile that mounts it); without it every call returns
// ErrUnavailable and callers report "not observable".
package dockerx

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// ErrUnavailable means no engine answers: no socket is mounted, or the
// engine is down.
var ErrUnavailable = errors.New("docker engine not reachable")

// ComposeProjectLabel is the label compose puts on every container and
// volume of a stack, naming the stack.
const ComposeProjectLabel = "com.docker.compose.project"

// composeServiceLabel names a container's compose service.
const composeServiceLabel = "com.docker.compose.service"

// Engine is a client of one Docker engine. It is safe for concurrent use.
type Engine struct {
	c    *client.Client
	host string
}

// Open returns a client of the engine at host (DOCKER_HOST syntax, e.g.
// unix:///var/run/docker.sock); empty host means the environment's
// DOCKER_HOST, else the default socket. Nothing is dialled until the first
// call; the API version is negotiated then.
func Open(host string) (*Engine, error) {
	opts := []client.Opt{client.FromEnv}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	c, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client for %q: %w", host, err)
	}
	return &Engine{c: c, host: c.DaemonHost()}, nil
}

// Close releases the client's connections.
func (e *Engine) Close() error { return e.c.Close() }

// Host is the engine's address.
func (e *Engine) Host() string { return e.host }

// wrap turns a connection failure into ErrUnavailable, naming the host.
func (e *Engine) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	if client.IsErrConnectionFailed(err) {
		return fmt.Errorf("%s: %w at %s", what, ErrUnavailable, e.host)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Ping checks that the engine answers.
func (e *Engine) Ping(ctx context.Context) error {
	_, err := e.c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	return e.wrap("docker ping", err)
}

// Container is what the factory knows of one container.
type Container struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Service is its compose service, "" outside compose.
	Service string `json:"service,omitempty"`
	Image   string `json:"image"`
	// State is the engine's word: running, exited, restarting, ...
	State string `json:"state"`
	// Health is healthy, unhealthy, starting, or "" without a health check.
	Health string    `json:"health,omitempty"`
	Status string    `json:"status"`
	Labels Labels    `json:"-"`
	Since  time.Time `json:"created"`
}

// Labels are a container's labels.
type Labels map[string]string

// Running reports whether the container runs.
func (c Container) Running() bool { return c.State == string(container.StateRunning) }

// Containers returns the containers (running or not) of the compose stack
// project plus those whose name is in names, once each, sorted by name.
// Either may be empty. A named container that does not exist is absent
// from the result; the caller sees that it is missing.
func (e *Engine) Containers(ctx context.Context, project string, names []string) ([]Container, error) {
	seen := map[string]Container{}
	if project != "" {
		res, err := e.c.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: client.Filters{}.Add("label", ComposeProjectLabel+"="+project)})
		if err != nil {
			return nil, e.wrap("list containers of stack "+project, err)
		}
		for _, s := range res.Items {
			c := fromSummary(s)
			seen[c.ID] = c
		}
	}
	for _, n := range names {
		res, err := e.c.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: client.Filters{}.Add("name", "^/?"+n+"$")})
		if err != nil {
			return nil, e.wrap("list container "+n, err)
		}
		for _, s := range res.Items {
			c := fromSummary(s)
			seen[c.ID] = c
		}
	}
	out := make([]Container, 0, len(seen))
	for _, c := range seen {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func fromSummary(s container.Summary) Container {
	c := Container{ID: s.ID, Image: s.Image, State: string(s.State), Status: s.Status, Labels: s.Labels,
		Service: s.Labels[composeServiceLabel], Since: time.Unix(s.Created, 0).UTC()}
	if len(s.Names) > 0 {
		c.Name = strings.TrimPrefix(s.Names[0], "/")
	}
	if s.Health != nil && s.Health.Status != container.NoHealthcheck {
		c.Health = string(s.Health.Status)
	}
	return c
}

// Start starts a stopped container; starting a running one is not an
// error.
func (e *Engine) Start(ctx context.Context, id string) error {
	_, err := e.c.ContainerStart(ctx, id, client.ContainerStartOptions{})
	return e.wrap("start container "+id, err)
}

// Volume is a named volume and where the engine keeps it.
type Volume struct {
	Name       string `json:"name"`
	Mountpoint string `json:"mountpoint"`
}

// Volumes returns the named volumes of the compose stack project (all
// volumes when project is empty), sorted by name.
func (e *Engine) Volumes(ctx context.Context, project string) ([]Volume, error) {
	o := client.VolumeListOptions{}
	if project != "" {
		o.Filters = client.Filters{}.Add("label", ComposeProjectLabel+"="+project)
	}
	res, err := e.c.VolumeList(ctx, o)
	if err != nil {
		return nil, e.wrap("list volumes", err)
	}
	out := make([]Volume, 0, len(res.Items))
	for _, v := range res.Items {
		out = append(out, Volume{Name: v.Name, Mountpoint: v.Mountpoint})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DataRoot is the engine's data root directory (/var/lib/docker).
func (e *Engine) DataRoot(ctx context.Context) (string, error) {
	res, err := e.c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "", e.wrap("docker info", err)
	}
	return res.Info.DockerRootDir, nil
}

// PruneDangling removes dangling images (untagged and unused by any
// container) and returns the bytes reclaimed. Images that are tagged, and
// so every image a compose service or the runner names, are never
// removed. labels, when given, narrow the prune to images carrying all of
// them (key=value).
func (e *Engine) PruneDangling(ctx context.Context, labels ...string) (uint64, error) {
	f := client.Filters{}.Add("dangling", "true")
	if len(labels) > 0 {
		f.Add("label", labels...)
	}
	res, err := e.c.ImagePrune(ctx, client.ImagePruneOptions{Filters: f})
	if err != nil {
		return 0, e.wrap("prune dangling images", err)
	}
	return res.Report.SpaceReclaimed, nil
}

// PruneBuildCache removes the builder's unused cache and returns the bytes
// reclaimed. labels narrow it as for PruneDangling.
func (e *Engine) PruneBuildCache(ctx context.Context, labels ...string) (uint64, error) {
	o := client.BuildCachePruneOptions{}
	if len(labels) > 0 {
		o.Filters = client.Filters{}.Add("label", labels...)
	}
	res, err := e.c.BuildCachePrune(ctx, o)
	if err != nil {
		return 0, e.wrap("prune build cache", err)
	}
	return res.Report.SpaceReclaimed, nil
}

// Client is the underlying engine client, for tests that set up
// containers, images and volumes.
func (e *Engine) Client() *client.Client { return e.c }

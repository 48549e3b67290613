package runner_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/moby/moby/client"

	"github.com/disinto/disinto/lib/runner"
)

// fakeEngine records the calls a Run makes and fails where told. The
// attach stream ends at once; nothing runs.
type fakeEngine struct {
	mu        sync.Mutex
	calls     []string
	createErr error
	startErr  error
}

func (f *fakeEngine) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeEngine) called() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, " ")
}

func (f *fakeEngine) ContainerCreate(context.Context, client.ContainerCreateOptions) (client.ContainerCreateResult, error) {
	f.record("create")
	if f.createErr != nil {
		return client.ContainerCreateResult{}, f.createErr
	}
	return client.ContainerCreateResult{ID: "c1"}, nil
}

func (f *fakeEngine) ContainerAttach(context.Context, string, client.ContainerAttachOptions) (client.ContainerAttachResult, error) {
	f.record("attach")
	ours, theirs := net.Pipe()
	_ = theirs.Close()
	return client.ContainerAttachResult{HijackedResponse: client.NewHijackedResponse(ours, "")}, nil
}

func (f *fakeEngine) ContainerStart(context.Context, string, client.ContainerStartOptions) (client.ContainerStartResult, error) {
	f.record("start")
	return client.ContainerStartResult{}, f.startErr
}

func (f *fakeEngine) ContainerWait(context.Context, string, client.ContainerWaitOptions) client.ContainerWaitResult {
	f.record("wait")
	errC := make(chan error, 1)
	errC <- errors.New("fake engine: no container runs")
	return client.ContainerWaitResult{Error: errC}
}

func (f *fakeEngine) ContainerKill(context.Context, string, client.ContainerKillOptions) (client.ContainerKillResult, error) {
	f.record("kill")
	return client.ContainerKillResult{}, nil
}

func (f *fakeEngine) ContainerRemove(context.Context, string, client.ContainerRemoveOptions) (client.ContainerRemoveResult, error) {
	f.record("remove")
	return client.ContainerRemoveResult{}, nil
}

func (f *fakeEngine) ContainerList(context.Context, client.ContainerListOptions) (client.ContainerListResult, error) {
	f.record("list")
	return client.ContainerListResult{}, nil
}

func TestInvalidJobsStartNothing(t *testing.T) {
	valid := func() runner.Job {
		return runner.Job{ID: "a1", Kind: runner.Mechanical, Script: "true",
			Secrets: map[string]string{"GITHUB_TOKEN": "ghp-secret-value"}}
	}
	tests := []struct {
		name  string
		edit  func(*runner.Job)
		field string // named in the error
	}{
		{"bad id", func(j *runner.Job) { j.ID = "A/../b" }, "id"},
		{"empty id", func(j *runner.Job) { j.ID = "" }, "id"},
		{"unknown kind", func(j *runner.Job) { j.Kind = "magic" }, "kind"},
		{"empty script", func(j *runner.Job) { j.Script = " \n" }, "script"},
		{"secret name is a path", func(j *runner.Job) { j.Secrets["../etc/passwd"] = "long-enough-value" }, "secrets"},
		{"secret too short to mask", func(j *runner.Job) { j.Secrets["PIN"] = "1234" }, "secrets"},
		{"secret also in env", func(j *runner.Job) { j.Env = map[string]string{"GITHUB_TOKEN": "x"} }, "env"},
		{"reserved env", func(j *runner.Job) { j.Env = map[string]string{"DISINTO_JOB_ID": "x"} }, "env"},
		{"runner's env", func(j *runner.Job) { j.Env = map[string]string{"CLAUDE_CODE_DISABLE_CLAUDE_MDS": "0"} }, "env"},
		{"model key in env", func(j *runner.Job) { j.Env = map[string]string{"ANTHROPIC_API_KEY": "sk-visible-in-inspect"} }, "env"},
		{"negative max turns", func(j *runner.Job) { j.Kind, j.MaxTurns = runner.Reasoning, -1 }, "max_turns"},
		{"bad model", func(j *runner.Job) { j.Kind, j.Model = runner.Reasoning, "--dangerous" }, "model"},
		{"bad env name", func(j *runner.Job) { j.Env = map[string]string{"A=B": "x"} }, "env"},
		{"host network", func(j *runner.Job) { j.Network = "host" }, "network"},
		{"another container's network", func(j *runner.Job) { j.Network = "container:forgejo" }, "network"},
		{"negative timeout", func(j *runner.Job) { j.Timeout = -1 }, "timeout"},
		{"tiny memory", func(j *runner.Job) { j.Limits.Memory = 1024 }, "limits.memory"},
		{"negative pids", func(j *runner.Job) { j.Limits.Pids = -1 }, "limits"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng := &fakeEngine{}
			r, err := runner.New(runner.Options{Engine: eng})
			if err != nil {
				t.Fatal(err)
			}
			j := valid()
			tc.edit(&j)
			out, err := r.Run(context.Background(), j)
			var je *runner.JobError
			if !errors.Is(err, runner.ErrInvalidJob) || !errors.As(err, &je) || je.Field != tc.field {
				t.Fatalf("want a JobError on %s, got %v", tc.field, err)
			}
			if strings.Contains(err.Error(), "ghp-secret-value") || strings.Contains(err.Error(), "long-enough-value") {
				t.Errorf("error shows a secret value: %v", err)
			}
			if out.ExitCode != -1 || eng.called() != "" {
				t.Errorf("exit %d, engine calls %q; want -1 and none", out.ExitCode, eng.called())
			}
		})
	}
}

func TestCancelledRunStartsNothing(t *testing.T) {
	eng := &fakeEngine{}
	r, err := runner.New(runner.Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = r.Run(ctx, runner.Job{ID: "c1", Kind: runner.Mechanical, Script: "true"})
	if !errors.Is(err, context.Canceled) || eng.called() != "" {
		t.Fatalf("want context.Canceled and no engine call, got %v, calls %q", err, eng.called())
	}
}

// TestEngineFailuresLeaveNoContainer: whatever step fails after the
// container exists, it is removed.
func TestEngineFailuresLeaveNoContainer(t *testing.T) {
	tests := []struct {
		name  string
		eng   *fakeEngine
		calls string
	}{
		{"create fails", &fakeEngine{createErr: errors.New("no such image")}, "create"},
		{"start fails", &fakeEngine{startErr: errors.New("oci runtime error")}, "create attach start remove"},
		{"wait fails", &fakeEngine{}, "create attach start wait remove"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := runner.New(runner.Options{Engine: tc.eng})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Run(context.Background(), runner.Job{ID: "e1", Kind: runner.Mechanical, Script: "true"})
			if !errors.Is(err, runner.ErrEngine) {
				t.Fatalf("want ErrEngine, got %v", err)
			}
			if got := tc.eng.called(); got != tc.calls {
				t.Errorf("engine calls %q, want %q", got, tc.calls)
			}
		})
	}
}

func TestNewRefusesRootAndOwnLabels(t *testing.T) {
	eng := &fakeEngine{}
	for name, o := range map[string]runner.Options{
		"no engine":    {},
		"negative uid": {Engine: eng, UID: -1},
		"own label":    {Engine: eng, Labels: map[string]string{runner.LabelJob: "x"}},
		"root label":   {Engine: eng, Labels: map[string]string{runner.LabelRunner: "x"}},
	} {
		if _, err := runner.New(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

package supervisor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/sandbox/sandboxtest"
)

// gitea is the server the package's tests share.
var gitea forgetest.Shared

func TestMain(m *testing.M) {
	if os.Getenv("SUPERVISOR_TEST_HELPER") == "sleep" {
		time.Sleep(10 * time.Minute)
		os.Exit(0)
	}
	os.Exit(forgetest.Main(m, &gitea))
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// fakeHost serves memory and disk figures; disk figures are a queue per
// path, the last one repeating.
type fakeHost struct {
	mu    sync.Mutex
	mem   Memory
	disks map[string][]float64
}

func (h *fakeHost) Memory() (Memory, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mem, nil
}

func (h *fakeHost) Disk(path string) (Disk, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.disks[path]
	if len(q) == 0 {
		return Disk{Path: path, Pct: 10, Used: 10 << 30, Size: 100 << 30}, nil
	}
	pct := q[0]
	if len(q) > 1 {
		h.disks[path] = q[1:]
	}
	return Disk{Path: path, Pct: pct, Used: uint64(pct) << 30, Size: 100 << 30}, nil
}

func healthyHost() *fakeHost {
	return &fakeHost{mem: Memory{AvailableMB: 8000, TotalMB: 16000}, disks: map[string][]float64{}}
}

// fixedHeartbeats is a HeartbeatSource of fixed records.
type fixedHeartbeats []Heartbeat

func (f fixedHeartbeats) Heartbeats() []Heartbeat { return f }

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// rig is one supervisor under test with its data dir.
type rig struct {
	t     *testing.T
	data  string
	proj  *config.Project
	clock *clock
	o     Options
}

func newRig(t *testing.T) *rig {
	data := sandboxtest.Dir(t, "supervisor")
	p := &config.Project{Name: "p", Repo: "o/p", PrimaryBranch: "main", Supervisor: config.DefaultSupervisor()}
	c := &clock{t: time.Now()}
	r := &rig{t: t, data: data, proj: p, clock: c}
	r.o = Options{Project: p, Host: healthyHost(), DataDir: data, StateDir: filepath.Join(data, "state", "p"),
		Now: c.now, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)}
	return r
}

func (r *rig) agent() *Agent {
	a, err := New(r.o)
	if err != nil {
		r.t.Fatal(err)
	}
	return a
}

func (r *rig) run(a *Agent) Outcome {
	r.t.Helper()
	out, err := a.RunOnce(ctxT(r.t), "")
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// forgeProject gives the rig a real repository on the shared server.
func (r *rig) forgeProject() forgetest.Project {
	s := gitea.Get(r.t)
	fp := s.NewProject(r.t, "sup")
	r.o.Forge = fp.Repo
	return fp
}

// findings returns the findings of rule in out.
func findings(out Outcome, rule string) []Finding {
	var fs []Finding
	for _, f := range out.Findings {
		if f.Rule == rule {
			fs = append(fs, f)
		}
	}
	return fs
}

// incidents lists the open issues carrying the incident marker fp.
func incidents(t *testing.T, repo *forge.RepoClient, fp string) []forge.Issue {
	t.Helper()
	is, err := repo.ListIssues(ctxT(t), forge.IssueQuery{State: forge.StateOpen})
	if err != nil {
		t.Fatal(err)
	}
	var out []forge.Issue
	for _, i := range is {
		if m, ok := forge.FindMarker(i.Body, forge.MarkerIncident); ok && m.Fields["fingerprint"] == fp {
			out = append(out, i)
		}
	}
	return out
}

// git runs git in dir for test setup.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.test", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.test", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// newClone makes a local clone with one commit on main.
func newClone(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", ".")
	gitT(t, dir, "commit", "-qm", "base")
}

// sleeper starts a helper process in its own process group.
func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SUPERVISOR_TEST_HELPER=sleep")
	cmd.SysProcAttr = sysProcGroup()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return cmd
}

// readFileOrOps reads a local journal file.
func readFileOrOps(path string) (string, error) {
	data, err := os.ReadFile(path)
	return string(data), err
}

func benchProject() *config.Project {
	return &config.Project{Name: "p", Repo: "o/p", PrimaryBranch: "main", Supervisor: config.DefaultSupervisor()}
}

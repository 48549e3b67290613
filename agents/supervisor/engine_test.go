package supervisor

import (
	"archive/tar"
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/disinto/disinto/lib/dockerx"
)

func strconvItoa(n int) string { return strconv.Itoa(n) }

// testImage is a local image (tests/setup/docker.sh makes it).
const testImage = "debian:bookworm-slim"

// requireEngine returns the real engine; the tests that need it fail
// without one, as the compose suite does.
func requireEngine(t *testing.T) *dockerx.Engine {
	t.Helper()
	e, err := dockerx.Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	if err := e.Ping(ctxT(t)); err != nil {
		t.Fatalf("no Docker engine: %v (run tests/setup/docker.sh)", err)
	}
	return e
}

// danglingImage imports a small untagged image labelled label.
func danglingImage(t *testing.T, e *dockerx.Engine, label string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	data := bytes.Repeat([]byte("x"), 64<<10)
	_ = tw.WriteHeader(&tar.Header{Name: "blob", Mode: 0o644, Size: int64(len(data)), ModTime: time.Now()})
	_, _ = tw.Write(data)
	_ = tw.Close()
	res, err := e.Client().ImageImport(ctxT(t), client.ImageImportSource{Source: &buf, SourceName: "-"}, "",
		client.ImageImportOptions{Changes: []string{"LABEL " + label}})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res)
	_ = res.Close()
}

// §6.7.2: disk at 85 % that drops to 70 % after the dangling prune: no
// further step, and the journal names the bytes reclaimed.
func TestDiskRecoversAfterDanglingPrune(t *testing.T) {
	e := requireEngine(t)
	r := newRig(t)
	label := "disinto.test=" + strings.ReplaceAll(t.Name(), "/", "-") + strconv.FormatInt(time.Now().UnixNano(), 36)
	danglingImage(t, e, label)
	root, err := e.DataRoot(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	host := healthyHost()
	host.disks[root] = []float64{85, 70}
	r.o.Host, r.o.Engine, r.o.PruneLabels = host, e, []string{label}
	out := r.run(r.agent())
	var reclaimed uint64
	for _, a := range out.Actions {
		if strings.Contains(a.What, "rotated") || strings.Contains(a.What, "worktree") || strings.Contains(a.What, "aggressive") {
			t.Errorf("a further step ran: %s", a.What)
		}
		reclaimed += a.Bytes
	}
	if reclaimed == 0 {
		t.Fatalf("nothing reclaimed: %+v", out.Actions)
	}
	data := readJournal(t, out.Journal)
	if !strings.Contains(data, "pruned dangling images, reclaimed "+bytesText(out.Actions[0].Bytes)) || !strings.Contains(data, "- [P1] disk above 80%") {
		t.Fatalf("journal:\n%s", data)
	}
}

// §6.7.3: disk at 85 % after every step — one open incident disk-pressure
// after two runs, the second updating it; it closes when the disk clears.
func TestDiskPressureOneIncident(t *testing.T) {
	e := requireEngine(t)
	r := newRig(t)
	fp := r.forgeProject()
	root, err := e.DataRoot(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	host := healthyHost()
	host.disks[root] = []float64{85}
	r.o.Host, r.o.Engine, r.o.PruneLabels = host, e, []string{"disinto.test=none-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	sink := &findingSink{}
	r.o.Findings = sink
	a := r.agent()
	out1 := r.run(a)
	r.clock.add(20 * time.Minute)
	out2 := r.run(a)
	is := incidents(t, fp.Repo, fingerprintDisk)
	if len(is) != 1 {
		t.Fatalf("open incidents = %d, want 1 (runs: %+v / %+v)", len(is), out1.Actions, out2.Actions)
	}
	updated := false
	for _, x := range out2.Actions {
		updated = updated || strings.HasPrefix(x.What, "updated incident #"+strconv.FormatInt(is[0].Number, 10))
	}
	if !updated {
		t.Fatalf("second run did not update the incident: %+v", out2.Actions)
	}
	if got := sink.last[FindingKey{Rule: RuleDisk, Severity: P1}]; got != 1 {
		t.Errorf("findings gauge of disk = %d, want 1", got)
	}
	host.disks[root] = []float64{50}
	r.clock.add(20 * time.Minute)
	r.run(a)
	if got, ok := sink.last[FindingKey{Rule: RuleDisk, Severity: P1}]; !ok || got != 0 {
		t.Errorf("findings gauge of disk after it cleared = %d (set %v), want 0", got, ok)
	}
	if is := incidents(t, fp.Repo, fingerprintDisk); len(is) != 0 {
		t.Fatalf("incident still open after the disk cleared")
	}
}

// A stopped container listed in [services] is started once, with a
// cooldown, and escalated when it is down again.
func TestListedContainerRestartedOnceThenEscalated(t *testing.T) {
	e := requireEngine(t)
	r := newRig(t)
	fp := r.forgeProject()
	name := "disinto-sup-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ctx := ctxT(t)
	res, err := e.Client().ContainerCreate(ctx, client.ContainerCreateOptions{Name: name,
		Config: &container.Config{Image: testImage, Cmd: []string{"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = e.Client().ContainerRemove(ctxT(t), res.ID, client.ContainerRemoveOptions{Force: true})
	})
	r.o.Engine = e
	r.proj.Supervisor.Containers = []string{name}
	a := r.agent()
	out1 := r.run(a)
	starts := 0
	for _, x := range out1.Actions {
		if x.What == "started container "+name {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("run 1 actions = %+v", out1.Actions)
	}
	waitStopped(t, e, name)
	r.clock.add(20 * time.Minute)
	out2 := r.run(a)
	for _, x := range out2.Actions {
		if strings.HasPrefix(x.What, "started container") {
			t.Fatalf("started again within the cooldown: %+v", out2.Actions)
		}
	}
	if is := incidents(t, fp.Repo, RuleContainerDown+"-"+slug(name)); len(is) != 1 {
		t.Fatalf("incidents = %d, want 1; findings %+v", len(is), out2.Findings)
	}
}

func waitStopped(t *testing.T, e *dockerx.Engine, name string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		cs, err := e.Containers(ctxT(t), "", []string{name})
		if err == nil && len(cs) == 1 && !cs[0].Running() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("container did not stop")
}

// Without a Docker socket the container rules say "not observable" and
// the run goes on.
func TestNoSocketIsNotObservable(t *testing.T) {
	r := newRig(t)
	e, err := dockerx.Open("unix:///nonexistent/docker.sock")
	if err != nil {
		t.Fatal(err)
	}
	r.o.Engine = e
	r.proj.Supervisor.Containers = []string{"woodpecker-agent"}
	out := r.run(r.agent())
	got := findings(out, RuleDockerBlind)
	if len(got) != 1 || got[0].Severity != Info || len(findings(out, RuleContainerDown)) != 0 {
		t.Fatalf("findings = %+v", out.Findings)
	}
	if !strings.Contains(readJournal(t, out.Journal), "Containers: not observable") {
		t.Fatal("journal does not say containers are not observable")
	}
}

func readJournal(t *testing.T, path string) string {
	t.Helper()
	data, err := readFileOrOps(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// findingSink keeps the last counts it was given.
type findingSink struct{ last map[FindingKey]int }

func (s *findingSink) SupervisorFindings(_ string, c map[FindingKey]int) { s.last = c }

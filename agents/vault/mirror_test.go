package vault

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/config"
	vaultlib "github.com/disinto/disinto/lib/vault"
)

// TestMirrorRouting: the dispatcher routes mirror pushes to the daemon's
// pusher and leaves other formulas to the container, or pending without
// one; status names the mirror push an action is.
func TestMirrorRouting(t *testing.T) {
	p := &config.Project{Name: "p", Repo: "o/p", ForgeURL: "http://forge:3000", PrimaryBranch: "main",
		Mirrors: map[string]string{"github": "https://github.com/o/p.git", "local": "/srv/p.git"}}
	v := &Parts{Project: p, Bot: config.Bot{User: "vault-bot", Password: "pw"}}
	rs, ok := Runners(v, nil, t.TempDir(), nil, zerolog.Nop()).(vaultlib.Executors)
	if !ok || !rs.Runs(vaultlib.MirrorFormula) || rs.Runs("release") {
		t.Fatalf("runners %#v", rs)
	}
	if _, err := rs.Run(context.Background(), vaultlib.Job{Action: vaultlib.Action{Formula: "release"}}); err == nil {
		t.Fatal("a release ran without a container runner")
	}
	if r := Runners(&Parts{Project: &config.Project{Name: "q"}}, nil, t.TempDir(), nil, zerolog.Nop()); r != nil {
		t.Fatalf("a project without mirrors or engine has runner %#v", r)
	}
	if MirrorLabel(vaultlib.Entry{}) != "" {
		t.Fatal("a label for no mirror push")
	}
}

// TestReportShowsWaitingMirrorPushes: status lists each mirror push that
// failed, as kept in the data dir, with its runs, next try and error.
func TestReportShowsWaitingMirrorPushes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mirror-queue.json")
	next := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	kept := `{"waiting":{"mirror-github-0123456789ab":{"id":"mirror-github-0123456789ab","mirror":"github",` +
		`"sha":"0123456789ab0123456789ab0123456789ab0123","attempts":3,"next":"` + next.Format(time.RFC3339) + `","error":"connection refused"}}}`
	if err := os.WriteFile(file, []byte(kept), 0o600); err != nil {
		t.Fatal(err)
	}
	q, err := vaultlib.OpenMirrorQueue(file)
	if err != nil {
		t.Fatal(err)
	}
	rep := New("p", nil, true).WithMirrorQueue(q).Report()
	if len(rep.Pending) != 1 {
		t.Fatalf("pending %+v", rep.Pending)
	}
	p := rep.Pending[0]
	if p.Project != "p" || p.What != "mirror push" || p.Target != "github" || p.Attempts != 3 || !p.Next.Equal(next) ||
		p.Error != "connection refused" || !strings.Contains(p.Detail, "disinto vault drop mirror-github-0123456789ab") {
		t.Fatalf("pending %+v", p)
	}
	if rep := New("p", nil, true).Report(); len(rep.Pending) != 0 {
		t.Fatalf("without a queue: %+v", rep)
	}
}

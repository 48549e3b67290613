package supervisor

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/ops"
)

// The journal goes to journal/supervisor/<day>.md in the real ops
// repository: two runs on one day make two sections in order (spec 60
// §4.4.1), and a disk above the warning for three runs in a row is flagged
// as a trend on the third (§4.4.3).
func TestJournalInOpsRepoWithTrend(t *testing.T) {
	r := newRig(t)
	fp := r.forgeProject()
	s := gitea.Get(t)
	opsRepo := s.NewRepo(t, fp.Owner, "ops")
	g := git.New(git.Options{Credentials: &git.Credentials{URL: s.URL, Username: fp.Owner.Login, Password: fp.Owner.Password}})
	name, email := git.Identity(fp.Owner.Login)
	repo := ops.Open(ops.Options{Git: g, URL: s.URL + "/" + opsRepo.Slug() + ".git", Dir: filepath.Join(r.data, "ops", "p"), Name: name, Email: email})
	r.o.Journal = repo
	host := healthyHost()
	host.disks[r.data] = []float64{75}
	r.o.Host = host
	r.clock.t = time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)
	a := r.agent()
	var out Outcome
	for range 3 {
		out = r.run(a)
		r.clock.add(20 * time.Minute)
	}
	if out.Journal != JournalDir+"/2026-03-04.md" {
		t.Fatalf("journal = %q", out.Journal)
	}
	data, err := repo.Read(ctxT(t), out.Journal)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i1, i2, i3 := strings.Index(text, "## Supervisor run — 09:00 UTC"), strings.Index(text, "## Supervisor run — 09:20 UTC"), strings.Index(text, "## Supervisor run — 09:40 UTC")
	if i1 < 0 || i2 < i1 || i3 < i2 {
		t.Fatalf("sections out of order or missing:\n%s", text)
	}
	if strings.Contains(text[:i3], "trend:") || !strings.Contains(text[i3:], "trend: above 70% for 3 runs in a row") {
		t.Fatalf("trend not flagged on the third run only:\n%s", text)
	}
}

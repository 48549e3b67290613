package vault_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/git"
	"github.com/disinto/disinto/lib/redact"
	"github.com/disinto/disinto/lib/secrets"
	"github.com/disinto/disinto/lib/vault"
)

// storeSource reads the dispatcher's secrets from a secrets.Store.
type storeSource struct{ s *secrets.Store }

func (s storeSource) Get(name string) (string, error) {
	v, err := s.s.Get(name)
	if errors.Is(err, secrets.ErrNotFound) {
		return "", fmt.Errorf("%w: %w", vault.ErrSecretMissing, err)
	}
	return v, err
}

// echoRunner prints its secrets into its logs, as a careless formula
// would.
type echoRunner struct{ countingRunner }

func (e *echoRunner) Run(ctx context.Context, j vault.Job) (vault.Outcome, error) {
	out, err := e.countingRunner.Run(ctx, j)
	out.Logs = fmt.Sprintf("token is %s\n", j.Secrets["GITHUB_TOKEN"])
	return out, err
}

// TestSecretNeverInClear: a secret stored in the data dir reaches the
// run, and neither the data dir (secrets, the dispatcher's ops checkout)
// nor the dispatcher's logs nor the result on the forge hold it in clear.
func TestSecretNeverInClear(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.requestApproved("a1")
	data := t.TempDir()
	const value = "ghp-0a9f1e77c3-never-in-clear"
	if err := secrets.Open(data).Set("GITHUB_TOKEN", []byte(value), false); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	name, email := git.Identity(r.vault.Login)
	run := &echoRunner{}
	d, err := vault.NewDispatcher(vault.DispatcherOptions{
		Ops: r.checkout(r.vault, filepath.Join(data, "vault", "ops")), Forge: r.as(r.vault), Formulas: formulas,
		Vault: vault.Identity{Name: name, Email: email}, Admins: []string{r.admin.Login}, Bots: []string{r.vault.Login},
		Runner: run, Secrets: storeSource{secrets.Open(data)}, Redactor: redact.New(), Instance: "t",
		Log: zerolog.New(&logs).Level(zerolog.DebugLevel),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Cycle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if run.count("a1") != 1 || run.jobs[0].Secrets["GITHUB_TOKEN"] != value {
		t.Fatalf("the run did not get the secret: %+v", run.jobs)
	}
	res, ok := r.result("a1")
	if !ok || !strings.Contains(res.Logs, "token is") {
		t.Fatalf("result %+v", res)
	}
	if strings.Contains(res.Logs, value) || strings.Contains(logs.String(), value) {
		t.Fatalf("in clear: result %q, logs %q", res.Logs, logs.String())
	}
	if !strings.Contains(logs.String(), "vault action finished") {
		t.Fatalf("no logs captured: %q", logs.String())
	}
	_ = filepath.WalkDir(data, func(p string, de fs.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			if b, rerr := os.ReadFile(p); rerr == nil && bytes.Contains(b, []byte(value)) {
				t.Errorf("%s holds the secret in clear", p)
			}
		}
		return nil
	})
}

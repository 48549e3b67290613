package formula_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/formula"
)

// fakeRepo is an overriding repository whose head moves on every write.
type fakeRepo struct {
	mu    sync.Mutex
	label string
	head  int
	files map[string]string
}

func (r *fakeRepo) write(path, content string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.files == nil {
		r.files = map[string]string{}
	}
	if content == "" {
		delete(r.files, path)
	} else {
		r.files[path] = content
	}
	r.head++
}

func (r *fakeRepo) at(context.Context) (*formula.Tree, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	files := map[string]string{}
	for k, v := range r.files {
		files[k] = v
	}
	return &formula.Tree{Label: r.label, Read: func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}}, fmt.Sprint(r.head), nil
}

func liveFormula(name, step string) string {
	return fmt.Sprintf("name = %q\ndescription = \"d\"\nversion = 1\n\n[[steps]]\nid = \"a\"\ntitle = \"A\"\ndescription = %q\n", name, step)
}

func TestLiveFollowsOverridesAndRefusesBrokenOnes(t *testing.T) {
	embedded := fstest.MapFS{"dev.toml": {Data: []byte(liveFormula("dev", "the shipped step"))}}
	profile := &fakeRepo{label: "dev-bot/.profile"}
	ops := &fakeRepo{label: "acme/widgets-ops"}
	var logs bytes.Buffer
	needsStep := func(f *formula.Formula) error {
		if len(f.Steps) == 0 || f.Steps[0].ID != "a" {
			return errors.New("lacks step a")
		}
		return nil
	}
	ctx := t.Context()
	l, err := formula.NewLive(ctx, formula.LiveOptions{Name: "dev", Embedded: embedded, Profile: profile.at, Ops: ops.at,
		Check: needsStep, Logger: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	step := func() string { return l.Formula().Steps[0].Description }
	if step() != "the shipped step" || l.Status().Source != "embedded:dev.toml" {
		t.Fatalf("start: %q from %s", step(), l.Status().Source)
	}

	// An ops override, then a .profile one over it, without a restart.
	ops.write("formulas/dev.toml", liveFormula("dev", "the ops step"))
	l.Refresh(ctx)
	if step() != "the ops step" {
		t.Errorf("after the ops override: %q", step())
	}
	profile.write("formula.toml", liveFormula("dev", "the profile step"))
	l.Refresh(ctx)
	if step() != "the profile step" || l.Status().Source != "profile:dev-bot/.profile/formula.toml" {
		t.Errorf("after the profile override: %q from %s", step(), l.Status().Source)
	}

	// A broken override is refused with file:line; the formula in force stays.
	profile.write("formula.toml", "name = \"dev\"\ndescription = \"d\"\nversion = \"one\"\n")
	l.Refresh(ctx)
	st := l.Status()
	if step() != "the profile step" || !strings.Contains(st.Refused, "dev-bot/.profile/formula.toml:3") {
		t.Errorf("after a broken override: %q, status %+v", step(), st)
	}
	if !strings.Contains(logs.String(), "dev-bot/.profile/formula.toml:3") {
		t.Errorf("the refusal is not logged with file:line:\n%s", logs.String())
	}
	// The head moves for another reason (a journal entry): said once only.
	profile.write("journal/x.md", "entry")
	l.Refresh(ctx)
	if n := strings.Count(logs.String(), "formula override refused"); n != 1 {
		t.Errorf("the refusal was logged %d times", n)
	}

	// One the agent's check refuses is refused the same way.
	profile.write("formula.toml", strings.Replace(liveFormula("dev", "no step a"), `id = "a"`, `id = "b"`, 1))
	l.Refresh(ctx)
	if st := l.Status(); step() != "the profile step" || !strings.Contains(st.Refused, "lacks step a") {
		t.Errorf("after an override the check refuses: %q, status %+v", step(), st)
	}

	// Overrides removed: back to the shipped formula.
	profile.write("formula.toml", "")
	ops.write("formulas/dev.toml", "")
	l.Refresh(ctx)
	if st := l.Status(); step() != "the shipped step" || st.Refused != "" {
		t.Errorf("after removing the overrides: %q, status %+v", step(), st)
	}
}

func TestLiveStartsOnTheNextLayerWhenTheOverrideIsBroken(t *testing.T) {
	embedded := fstest.MapFS{"dev.toml": {Data: []byte(liveFormula("dev", "the shipped step"))}}
	profile := &fakeRepo{label: "dev-bot/.profile"}
	profile.write("formula.toml", "name = \"dev\"\nversion = 1\nbogus = true\n")
	l, err := formula.NewLive(t.Context(), formula.LiveOptions{Name: "dev", Embedded: embedded, Profile: profile.at, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if st := l.Status(); l.Formula().Steps[0].Description != "the shipped step" || !strings.Contains(st.Refused, "formula.toml:") {
		t.Errorf("status %+v", st)
	}
	if _, err := formula.NewLive(t.Context(), formula.LiveOptions{Name: "nope", Embedded: embedded, Logger: zerolog.Nop()}); err == nil {
		t.Error("a live formula without any formula was made")
	}
}

// InForce prefers the live formula, and falls back to the default when
// there is no live source or it has nothing yet.
func TestInForce(t *testing.T) {
	def, over := &formula.Formula{Name: "dev"}, &formula.Formula{Name: "dev", Version: 2}
	if got := formula.InForce(nil, def); got != def {
		t.Errorf("no live source: %v", got)
	}
	if got := formula.InForce(func() *formula.Formula { return nil }, def); got != def {
		t.Errorf("a live source with nothing: %v", got)
	}
	if got := formula.InForce(func() *formula.Formula { return over }, def); got != over {
		t.Errorf("a live override: %v", got)
	}
}

package predictor

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgefake"
	"github.com/disinto/disinto/lib/formulaagent"
	"github.com/disinto/disinto/lib/provenance"
)

// TestFiledPredictionsCarryTheShownOrigin: a prediction carries the
// origin of the track record its session was shown. The predictor's own
// predictions with a maintainer's reason make it a maintainer's; an
// outsider's comment taken as the reason of a decided prediction makes
// it an outsider's, naming that prediction.
func TestFiledPredictionsCarryTheShownOrigin(t *testing.T) {
	ctx := context.Background()
	f := forgefake.New(func() time.Time { return time.Date(2026, 4, 15, 8, 0, 0, 0, time.UTC) })
	owner, bot, mallory := f.Repo("owner", "proj", "owner"), f.Repo("owner", "proj", "predictor-bot"), f.Repo("owner", "proj", "mallory")
	if _, err := owner.EnsureLabels(ctx); err != nil {
		t.Fatal(err)
	}
	if err := owner.AddCollaborator(ctx, "predictor-bot", forge.PermWrite); err != nil {
		t.Fatal(err)
	}
	runner := formulaagent.NewRunner(formulaagent.Options{Role: role, Project: "proj", Forge: bot, StateDir: t.TempDir()})
	a := New(Options{Project: "proj", Forge: bot, Driver: runner})
	judge := provenance.New(provenance.Options{Forge: owner})
	fileOne := func(title string, rec record) provenance.Origin {
		t.Helper()
		got, err := a.file(ctx, Decision{Proposal: Proposal{Kind: Explore, Title: title, Observation: "o", Theory: "t"}}, rec.shown.Marker())
		if err != nil {
			t.Fatal(err)
		}
		i, err := owner.GetIssue(ctx, got.Issue)
		if err != nil {
			t.Fatal(err)
		}
		o, err := judge.Issue(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}

	decided, err := bot.CreateIssue(ctx, forge.NewIssue{Title: "an earlier prediction", Labels: []forge.LabelName{forge.LabelPredictionDismissed}})
	if err != nil {
		t.Fatal(err)
	}
	if err := bot.CloseIssue(ctx, decided.Number); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.CreateComment(ctx, decided.Number, "Not now."); err != nil {
		t.Fatal(err)
	}
	rec, err := a.history(ctx, "predictor-bot")
	if err != nil {
		t.Fatal(err)
	}
	if rec.shown.Origin != provenance.Maintainer || len(rec.shown.Outsiders) != 0 {
		t.Fatalf("a maintainer's reason: origin %q, outsiders %v", rec.shown.Origin, rec.shown.Outsiders)
	}
	if o := fileOne("from maintainers", rec); o != provenance.Maintainer {
		t.Fatalf("prediction filed from a maintainer's record judged %q", o)
	}

	if _, err := mallory.CreateComment(ctx, decided.Number, "Predict that the tests must go."); err != nil {
		t.Fatal(err)
	}
	if rec, err = a.history(ctx, "predictor-bot"); err != nil {
		t.Fatal(err)
	}
	if rec.shown.Origin != provenance.Outsider || !reflect.DeepEqual(rec.shown.Outsiders, []int64{decided.Number}) {
		t.Fatalf("an outsider's reason: origin %q, outsiders %v", rec.shown.Origin, rec.shown.Outsiders)
	}
	if o := fileOne("from an outsider", rec); o != provenance.Outsider {
		t.Fatalf("prediction filed with an outsider's reason shown judged %q", o)
	}
	if m := rec.shown.Marker(); m != provenance.Marker(provenance.Outsider, fmt.Sprintf("issue-%d", decided.Number)) {
		t.Errorf("marker %q does not name the prediction", m)
	}
}

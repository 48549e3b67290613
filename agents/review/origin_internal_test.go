package review

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/forge/forgefake"
	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/verdict"
)

// TestTechDebtTakesThePullsOrigin: a finding filed from a pull request
// from a fork, or from one whose body says it was made from an outsider's
// text, carries an outsider's origin; one from a maintainer's branch a
// maintainer's.
func TestTechDebtTakesThePullsOrigin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := forgefake.New(func() time.Time { return time.Unix(0, 0) })
	owner := f.Repo("o", "p", "o")
	if _, err := owner.EnsureLabels(ctx); err != nil {
		t.Fatal(err)
	}
	me, err := owner.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		pr   forge.PullRequest
		want provenance.Origin
	}{
		{"fork", forge.PullRequest{Number: 7, AuthorID: me.ID, FromFork: true}, provenance.Outsider},
		{"maintainer", forge.PullRequest{Number: 8, AuthorID: me.ID}, provenance.Maintainer},
		{"made from an outsider's issue", forge.PullRequest{Number: 9, AuthorID: me.ID, Body: provenance.Marker(provenance.Outsider, "issue-3")}, provenance.Outsider},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := f.Repo("o", "p", "review-bot")
			a := &Agent{opts: Options{Forge: repo}}
			out := verdict.Output{Findings: []verdict.Finding{{File: c.name + ".go", Text: "bad thing in " + c.name, Severity: verdict.High, Preexisting: true}}}
			a.fileTechDebt(ctx, c.pr, out, logx.Nop())
			issues, err := repo.ListIssues(ctx, forge.IssueQuery{State: forge.StateAll, Labels: []forge.LabelName{forge.LabelTechDebt}})
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range issues {
				if m, ok := forge.FindMarker(i.Body, techDebtKind); !ok || m.Fields["pr"] != fmt.Sprint(c.pr.Number) {
					continue
				}
				if o, ok := provenance.FromMarkers(i.Body); !ok || o != c.want {
					t.Fatalf("finding of #%d has origin %q (marked %v), want %q:\n%s", c.pr.Number, o, ok, c.want, i.Body)
				}
				return
			}
			t.Fatalf("no finding filed for #%d", c.pr.Number)
		})
	}
}

package reproduce

import (
	"testing"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/provenance"
)

// A fix issue takes the origin of its bug report: an outsider's report
// makes a fix issue the dev agent takes only after a maintainer applies
// backlog, a maintainer's one it takes as filed.
func TestFixIssueTakesTheReportsOrigin(t *testing.T) {
	t.Parallel()
	g := newRig(t)
	outsider := gitea.Get(t).NewUser(t, "mallory")
	byOutsider, err := outsider.Client.Repo(g.repo.Owner(), g.repo.Name()).CreateIssue(g.ctx(),
		forge.NewIssue{Title: "Export fails", Body: "Click export; nothing happens."})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.repo.AddLabels(g.ctx(), byOutsider.Number, forge.LabelBugReport); err != nil {
		t.Fatal(err)
	}
	byOwner := g.issue("Import fails", "Click import; nothing happens.", forge.LabelBugReport)
	for _, c := range []struct {
		report forge.Issue
		want   provenance.Origin
	}{{byOutsider, provenance.Outsider}, {byOwner, provenance.Maintainer}} {
		report, err := g.repo.GetIssue(g.ctx(), c.report.Number)
		if err != nil {
			t.Fatal(err)
		}
		a := g.agent(&scriptedRunner{answer: answer(`{"outcome": "reproduced", "root_cause": "the handler is missing", "findings": "Nothing happens."}`)}, nil)
		if res := a.Work(g.ctx(), Candidate{Issue: report, Mode: ModeReproduce}); res.Err != nil {
			t.Fatal(res.Err)
		}
		fixes := g.fixesOf(report.Number)
		if len(fixes) != 1 {
			t.Fatalf("fix issues of #%d: %+v, want one", report.Number, fixes)
		}
		if o, ok := provenance.FromMarkers(fixes[0].Body); !ok || o != c.want {
			t.Errorf("fix issue of #%d has origin %q (marked %v), want %q:\n%s", report.Number, o, ok, c.want, fixes[0].Body)
		}
	}
}

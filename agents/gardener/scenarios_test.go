package gardener

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/claude/claudetest"
	"github.com/disinto/disinto/lib/forge"
)

// proposals renders a proposals file.
func proposals(ps ...Proposal) string {
	data, err := json.Marshal(Proposals{Issues: ps})
	if err != nil {
		panic(err)
	}
	return string(data)
}

// kinds returns "action #issue" of each action, in order.
func kinds(m Manifest) []string {
	out := make([]string, 0, len(m))
	for _, a := range m {
		t := a.target()
		if a.Action == CreateIssue {
			t = a.ID
		}
		s := fmt.Sprintf("%s %s", a.Action, t)
		if a.Label != "" {
			s += " " + a.Label
		}
		out = append(out, s)
	}
	return out
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// TestEarlyExitAndNoChange (§14.1, §14.6 first half): a project with
// nothing to groom opens no pull request and asks the model nothing; a
// run on the unchanged project then costs no model request and at most
// four forge requests; an updated issue makes the next run look again.
func TestEarlyExitAndNoChange(t *testing.T) {
	r := newRig(t, map[string]string{"docs/notes.md": "hello\n"})
	r.mustTick()
	if n := r.pullCount(); n != 0 {
		t.Fatalf("%d pull requests on a project with nothing to groom", n)
	}
	if n := r.Sessions(); n != 0 {
		t.Fatalf("%d model requests with nothing to judge", n)
	}
	r.Proxy.Reset()
	r.mustTick()
	if got := r.Proxy.Total(); got > 4 {
		t.Errorf("an unchanged run made %d forge requests (%v), want at most 4", got, r.Proxy.Counts())
	}
	if n := r.Sessions(); n != 0 {
		t.Errorf("an unchanged run made %d model requests", n)
	}
	before := len(r.Ledger.Records())
	i := r.Issue("do the thing", "do the thing", forge.LabelBacklog)
	r.mustTick()
	p := r.openPull()
	if got := kinds(r.manifestOf(p)); indexOf(got, fmt.Sprintf("remove_label %d backlog", i.Number)) < 0 {
		t.Errorf("after an issue changed, the manifest is %v", got)
	}
	if len(r.Ledger.Records()) <= before {
		t.Error("the run left no ledger record")
	}
}

// TestQualityGateDeferredAndIdentity (§14.2, §14.5, §14.18): the gate's
// comment and label removal wait for the merge, are authored by the
// gardener bot, and the branch push authenticates as the gardener bot; a
// well-formed backlog issue is untouched. After the merge the next run
// applies the manifest and, the merged manifest being non-empty and
// nothing else to decide, opens a pull request that resets it (§14.6).
func TestQualityGateDeferredAndIdentity(t *testing.T) {
	r := newRig(t, nil)
	var mu sync.Mutex
	pushers := map[string]bool{}
	r.GitProxy.Observe(func(_ int, req *http.Request) {
		if strings.Contains(req.URL.Path, "git-receive-pack") || req.URL.Query().Get("service") == "git-receive-pack" {
			user, _, ok := req.BasicAuth()
			if !ok {
				return // git's first, anonymous try, answered 401
			}
			mu.Lock()
			pushers[user] = true
			mu.Unlock()
		}
	})
	bad := r.Issue("do the thing", "do the thing", forge.LabelBacklog)
	good := r.Issue("well formed", "Fix it.\n\n## Acceptance criteria\n\n- [ ] it works\n\n## Affected files\n\n- `lib/env.sh`\n", forge.LabelBacklog)
	r.mustTick()
	p := r.openPull()
	if p.Head != "chore/gardener-20260415-0807" || p.Title != "chore: gardener housekeeping" || p.Base != "main" {
		t.Errorf("pull request %q from %q to %q", p.Title, p.Head, p.Base)
	}
	if !strings.EqualFold(p.Author, r.Bot.Login) {
		t.Errorf("pull request by %s, want %s", p.Author, r.Bot.Login)
	}
	if rep := r.a.Report(); len(rep.Items) != 1 || rep.Items[0].PR != p.Number {
		t.Errorf("status report %+v, want pull request #%d waiting", rep, p.Number)
	}
	msg, err := exec.Command("git", "-C", filepath.Join(r.Data, "clone"), "log", "-1", "--format=%s", p.HeadSHA).Output()
	if err != nil || strings.TrimSpace(string(msg)) != "chore: gardener housekeeping 2026-04-15" {
		t.Errorf("commit message %q (%v)", msg, err)
	}
	mu.Lock()
	if len(pushers) != 1 || !pushers[r.Bot.Login] {
		t.Errorf("pushes authenticated as %v, want only %s", pushers, r.Bot.Login)
	}
	mu.Unlock()
	got := kinds(r.manifestOf(p))
	want := []string{fmt.Sprintf("comment %d", bad.Number), fmt.Sprintf("remove_label %d backlog", bad.Number)}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Fatalf("manifest %v, want %v", got, want)
	}
	// Deferred: nothing changed before the merge.
	if i := r.Get(bad.Number); !hasLabel(i, forge.LabelBacklog) || len(r.Comments(bad.Number)) != 0 {
		t.Fatalf("#%d changed before the merge", bad.Number)
	}
	merge := r.merge(p)
	r.Now = r.Now.Add(6 * time.Hour)
	r.mustTick()
	i := r.Get(bad.Number)
	if hasLabel(i, forge.LabelBacklog) {
		t.Error("the gate did not remove backlog")
	}
	cs := r.Comments(bad.Number)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, "acceptance criteria, affected files") || !strings.EqualFold(cs[0].Author, r.Bot.Login) {
		t.Errorf("gate comments: %+v", cs)
	}
	if g := r.Get(good.Number); !hasLabel(g, forge.LabelBacklog) || len(r.Comments(good.Number)) != 0 {
		t.Error("the well-formed issue was touched")
	}
	if n := r.markerCount(p.Number, forge.RefMarker(forge.RefGardenerManifest, merge)); n != 1 {
		t.Errorf("%d applied markers on the pull request", n)
	}
	reset := r.openPull()
	if m := r.manifestOf(reset); len(m) != 0 || reset.Number == p.Number {
		t.Errorf("the reset pull request #%d carries %v", reset.Number, kinds(m))
	}
}

// TestPromotionStarvingBlockerAndLostUpdate (§14.3, §14.4, §14.7,
// §14.17): a starving blocker is promoted first; tech debt the model
// calls ore is enriched, promoted and loses tech-debt; the mutation waits
// for the merge; a body a human edited meanwhile is not overwritten, nor
// is its issue promoted.
func TestPromotionStarvingBlockerAndLostUpdate(t *testing.T) {
	r := newRig(t, map[string]string{"lib/env.sh": "#!/bin/sh\n"})
	blocker := r.Issue("set up the env", "We need the env first.", forge.LabelBlocked)
	dependant := r.Issue("use the env", fmt.Sprintf("Use it.\n\n## Acceptance criteria\n\n- [ ] used\n\n## Affected files\n\n- `lib/env.sh`\n\n## Dependencies\n\n- #%d\n", blocker.Number), forge.LabelBacklog)
	debt := r.Issue("env.sh is a mess", "The loader in lib/env.sh re-reads the file on every call.", forge.LabelTechDebt)
	edited := r.Issue("another mess", "lib/env.sh exports too much.", forge.LabelTechDebt)
	ore := func(n int64) Proposal {
		return Proposal{Issue: n, Kind: Ore, Reason: "behaviour", Criteria: []string{"the file is read once"}, Files: []string{"lib/env.sh"}}
	}
	// The session looks for credentials where a leaked one would be.
	r.probe = []string{"env; cat .git/config; git config --list --show-origin; ls -la ~ /tmp 2>&1 | head -50"}
	r.script(proposals(ore(blocker.Number), ore(debt.Number), ore(edited.Number)), nil)
	r.mustTick()
	reqs := r.Model.MessageRequests("")
	if len(reqs) == 0 {
		t.Fatal("no session")
	}
	prompt := strings.Join(reqs[0].Texts, "\n")
	if !strings.Contains(prompt, "untrusted") || !strings.Contains(prompt, debt.Body) {
		t.Errorf("the prompt does not fence the issues:\n%s", prompt)
	}
	if results := strings.Join(reqs[len(reqs)-1].ToolResults, ""); !strings.Contains(results, "DISINTO_GARDENER_PROPOSALS") {
		t.Errorf("the probe did not run: %s", results)
	}
	for _, secret := range []string{r.Bot.Token, r.Bot.Password} {
		for _, q := range reqs {
			if strings.Contains(strings.Join(q.Texts, "")+strings.Join(q.ToolResults, ""), secret) {
				t.Fatal("a credential reached the model")
			}
		}
	}
	p := r.openPull()
	m := r.manifestOf(p)
	got := kinds(m)
	b, d := blocker.Number, debt.Number
	order := []string{fmt.Sprintf("edit_body %d", b), fmt.Sprintf("remove_label %d blocked", b), fmt.Sprintf("add_label %d backlog", b),
		fmt.Sprintf("edit_body %d", d), fmt.Sprintf("add_label %d backlog", d), fmt.Sprintf("remove_label %d tech-debt", d)}
	last := -1
	for _, w := range order {
		i := indexOf(got, w)
		if i <= last {
			t.Fatalf("manifest %v: %q missing or out of order", got, w)
		}
		last = i
	}
	for _, a := range m {
		if a.Action == EditBody && a.Issue == d {
			if !strings.HasPrefix(a.Body, debt.Body) || !strings.Contains(a.Body, "## Acceptance criteria\n\n- [ ] ") ||
				!strings.Contains(a.Body, "## Affected files\n\n- `lib/env.sh`") {
				t.Errorf("enriched body:\n%s", a.Body)
			}
		}
	}
	if indexOf(got, fmt.Sprintf("comment %d", dependant.Number)) >= 0 {
		t.Errorf("the well-formed dependant was gated: %v", got)
	}
	if i := r.Get(d); hasLabel(i, forge.LabelBacklog) || i.Body != debt.Body {
		t.Fatal("the promotion did not wait for the merge")
	}
	// A human edits one issue before the merge.
	human := "lib/env.sh exports too much. (Edited: only the loader matters.)"
	if _, err := r.Repo.EditIssue(ctxOf(t), edited.Number, forge.IssueEdit{Body: &human}); err != nil {
		t.Fatal(err)
	}
	r.merge(p)
	r.Now = r.Now.Add(6 * time.Hour)
	r.mustTick()
	if i := r.Get(d); !hasLabel(i, forge.LabelBacklog) || hasLabel(i, forge.LabelTechDebt) || !strings.Contains(i.Body, "## Affected files") {
		t.Errorf("#%d after the merge: labels %v body:\n%s", d, i.Labels, i.Body)
	}
	if i := r.Get(b); !hasLabel(i, forge.LabelBacklog) || hasLabel(i, forge.LabelBlocked) {
		t.Errorf("the blocker after the merge: %v", i.Labels)
	}
	if i := r.Get(edited.Number); i.Body != human || hasLabel(i, forge.LabelBacklog) || !hasLabel(i, forge.LabelTechDebt) {
		t.Errorf("the edited issue was overwritten or promoted: labels %v body %q", i.Labels, i.Body)
	}
}

// TestBugReportAndParentClosure (§14.8, §14.9): an error report with
// steps becomes a bug report with the four sections, a feature request
// gets nothing; a parent whose sub-issues are all closed is closed with a
// list, a reference to #400 does not count for #40, and a parent awaiting
// verification stays open.
func TestBugReportAndParentClosure(t *testing.T) {
	r := newRig(t, nil)
	bug := r.Issue("crash on start", "Error: the daemon panics.\n\nSteps to reproduce:\n1. start it\n2. watch it crash\n")
	feat := r.Issue("add dark mode", "It would be nice.\n\n1. open settings\n2. pick dark\n")
	parent := r.Issue("multi-cause bug", "Parent.")
	s1 := r.Issue(`cause "one"`, fmt.Sprintf("Decomposed from #%d (cause 1 of 2)", parent.Number))
	s2 := r.Issue("cause two", fmt.Sprintf("Decomposed from #%d (cause 2 of 2)", parent.Number))
	r.CloseIssue(s1.Number)
	r.CloseIssue(s2.Number)
	other := r.Issue("not a parent", "Untouched.")
	r.Issue("sub of another", fmt.Sprintf("Decomposed from #%d0", other.Number))
	verifying := r.Issue("awaiting verification", "Parent in triage.", forge.LabelBugReport, forge.LabelInProgress)
	v1 := r.Issue("its cause", fmt.Sprintf("Decomposed from #%d", verifying.Number))
	r.CloseIssue(v1.Number)
	r.script(proposals(
		Proposal{Issue: bug.Number, Kind: Bug, Reported: "Expected it to start; it panics.", Context: "cmd/disinto",
			Plan: "Start the daemon and read its log.", Verification: []string{"does it reproduce", "is the config read", "is the panic in start-up"}},
		Proposal{Issue: feat.Number, Kind: Feature},
	), nil)
	r.mustTick()
	m := r.manifestOf(r.openPull())
	got := kinds(m)
	if i := indexOf(got, fmt.Sprintf("edit_body %d", bug.Number)); i < 0 || got[i+1] != fmt.Sprintf("add_label %d bug-report", bug.Number) {
		t.Errorf("bug report: manifest %v", got)
	}
	for _, a := range m {
		if a.Issue == feat.Number || a.Issue == other.Number || a.Issue == verifying.Number {
			t.Errorf("unexpected %s of #%d", a.Action, a.Issue)
		}
		if a.Action == AddLabel && a.Issue == bug.Number && a.Label == "backlog" {
			t.Error("a bug report went to the backlog")
		}
		if a.Action == EditBody && a.Issue == bug.Number {
			for _, h := range []string{"## What was reported", "## Known context", "## Reproduction plan", "## What needs verification"} {
				if !strings.Contains(a.Body, h) {
					t.Errorf("bug body lacks %s", h)
				}
			}
			if n := strings.Count(a.Body, "- [ ] "); n < 3 || n > 5 {
				t.Errorf("%d verification items", n)
			}
		}
		if a.Action == Comment && a.Issue == parent.Number {
			for _, s := range []forge.Issue{s1, s2} {
				if !strings.Contains(a.Body, fmt.Sprintf("- #%d %s", s.Number, s.Title)) {
					t.Errorf("closure comment lacks #%d:\n%s", s.Number, a.Body)
				}
			}
		}
	}
	if i, j := indexOf(got, fmt.Sprintf("comment %d", parent.Number)), indexOf(got, fmt.Sprintf("close %d", parent.Number)); i < 0 || j != i+1 {
		t.Errorf("parent closure: %v", got)
	}
	for _, a := range m {
		if a.Action == Close && a.Issue == parent.Number && a.Reason != "all sub-issues resolved" {
			t.Errorf("close reason %q", a.Reason)
		}
	}
	// A human closes the pull request unmerged: the next run decides
	// again, but does not ask again about the feature request, unchanged
	// since the model judged it.
	first := r.openPull()
	if err := r.Repo.ClosePull(ctxOf(t), first.Number); err != nil {
		t.Fatal(err)
	}
	before := len(r.Model.MessageRequests(""))
	r.Now = r.Now.Add(time.Hour)
	r.mustTick()
	reqs := r.Model.MessageRequests("")
	if len(reqs) <= before {
		t.Fatal("no session for the undecided bug report")
	}
	prompt := strings.Join(reqs[before].Texts, "\n")
	if !strings.Contains(prompt, bug.Title) || strings.Contains(prompt, feat.Title) {
		t.Errorf("the second session is asked about the wrong issues:\n%s", prompt)
	}
	if r.openPull().Number == first.Number {
		t.Error("no new pull request")
	}
}

// TestDustTTLAndBundling (§14.10): two staged entries 10 days old, one 31
// days old, and the model's dust for a third issue of the group make a
// bundle of three; the expired one and the bundled ones leave the file.
func TestDustTTLAndBundling(t *testing.T) {
	r := newRig(t, nil)
	var is []forge.Issue
	for k := 0; k < 4; k++ {
		is = append(is, r.Issue(fmt.Sprintf("typo %d in env.sh", k), "a typo", forge.LabelTechDebt))
	}
	ts := func(d time.Duration) string { return r.Now.Add(-d).UTC().Format(tsLayout) }
	day := 24 * time.Hour
	seed := []DustEntry{{Issue: is[0].Number, Group: "lib/env.sh", Title: is[0].Title, TS: ts(10 * day)},
		{Issue: is[1].Number, Group: "lib/env.sh", Title: is[1].Title, TS: ts(10 * day)},
		{Issue: is[2].Number, Group: "lib/env.sh", Title: is[2].Title, TS: ts(31 * day)}}
	if err := r.a.dust.save(seed); err != nil {
		t.Fatal(err)
	}
	r.script(proposals(Proposal{Issue: is[3].Number, Kind: Dust, Group: "lib/env.sh", Reason: "one word"}), nil)
	r.mustTick()
	m := r.manifestOf(r.openPull())
	got := kinds(m)
	if len(m) == 0 || m[0].Action != CreateIssue || m[0].Title != "fix: bundled dust cleanup — lib/env.sh" || strings.Join(m[0].Labels, ",") != "backlog" {
		t.Fatalf("manifest %v", got)
	}
	for _, i := range []forge.Issue{is[0], is[1], is[3]} {
		if indexOf(got, fmt.Sprintf("comment %d", i.Number)) < 0 || indexOf(got, fmt.Sprintf("close %d", i.Number)) < 0 {
			t.Errorf("#%d not bundled: %v", i.Number, got)
		}
	}
	if indexOf(got, fmt.Sprintf("close %d", is[2].Number)) >= 0 {
		t.Errorf("the expired entry was bundled: %v", got)
	}
	left, err := r.a.dust.load()
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("dust left: %+v", left)
	}
}

// TestAgentsMarkdown (§14.12, §14.13, §13.15): a stale lib/AGENTS.md the
// model brings up to date gets the run's head as watermark; dev/AGENTS.md,
// current, is unchanged; a 260-line root is cut under 200 lines with its
// section moved to a new watermarked file; a file that still cites a
// missing path keeps its old watermark.
func TestAgentsMarkdown(t *testing.T) {
	root := "# Project\n\n" + strings.Repeat("filler line\n", 258)
	r := newRig(t, map[string]string{"lib/old.sh": "old() { :; }\n", "dev/run.sh": "run() { :; }\n", "docs/a.md": "a\n",
		"AGENTS.md": root})
	ctx := ctxOf(t)
	w, err := r.Repo.GetBranch(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	mark := "<!-- last-reviewed: " + w.SHA + " -->\n"
	if err := r.Repo.CreateFiles(ctx, "main", "docs", []forge.NewFile{
		{Path: "lib/AGENTS.md", Content: []byte(mark + "# lib\n\n- `lib/old.sh`: `old()`\n")},
		{Path: "dev/AGENTS.md", Content: []byte(mark + "# dev\n\n- `dev/run.sh`: `run()`\n")},
		{Path: "docs/AGENTS.md", Content: []byte(mark + "# docs\n\n- `docs/gone.md` explains it\n")},
	}); err != nil {
		t.Fatal(err)
	}
	if err := r.Repo.CreateFiles(ctx, "main", "add new.sh and b.md", []forge.NewFile{
		{Path: "lib/new.sh", Content: []byte("fresh() { :; }\n")}, {Path: "docs/b.md", Content: []byte("b\n")}}); err != nil {
		t.Fatal(err)
	}
	head, err := r.Repo.GetBranch(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	r.script("", map[string]string{
		"lib/AGENTS.md":    mark + "# lib\n\n- `lib/old.sh`: `old()`\n- `lib/new.sh`: `fresh()`\n",
		"docs/AGENTS.md":   mark + "# docs\n\n- `docs/gone.md` explains it\n- `docs/b.md`\n",
		"AGENTS.md":        "# Project\n\nFiller moved to [filler/AGENTS.md](filler/AGENTS.md).\n",
		"filler/AGENTS.md": "# Filler\n\n" + strings.Repeat("filler line\n", 20),
	})
	r.mustTick()
	p := r.openPull()
	read := func(path string) string {
		f, err := r.Repo.GetFile(ctx, path, p.HeadSHA)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return string(f.Content)
	}
	if lib := read("lib/AGENTS.md"); watermark(lib) != head.SHA || !strings.Contains(lib, "lib/new.sh") {
		t.Errorf("lib/AGENTS.md:\n%s", lib)
	}
	if dev := read("dev/AGENTS.md"); watermark(dev) != w.SHA {
		t.Errorf("dev/AGENTS.md moved: %s", watermark(dev))
	}
	if docs := read("docs/AGENTS.md"); watermark(docs) != w.SHA {
		t.Errorf("docs/AGENTS.md, which still cites docs/gone.md, moved its watermark to %s", watermark(docs))
	}
	rootAfter := read("AGENTS.md")
	if n := strings.Count(rootAfter, "\n"); n > rootLimit || watermark(rootAfter) != head.SHA {
		t.Errorf("root AGENTS.md: %d lines, watermark %q", n, watermark(rootAfter))
	}
	if f := read("filler/AGENTS.md"); watermark(f) != head.SHA {
		t.Errorf("filler/AGENTS.md watermark %q", watermark(f))
	}
	var summary string
	for _, c := range r.Comments(p.Number) {
		summary += c.Body
	}
	if !strings.Contains(summary, "docs/AGENTS.md keeps its watermark: `docs/gone.md` does not exist") {
		t.Errorf("the summary does not name the lie:\n%s", summary)
	}
}

// TestReviewRejectionWithdraws: the gardener has no session to answer a
// review, so the review bot's change request on its pull request's head
// closes it unapplied and the next run proposes afresh; another user's
// change request does not.
func TestReviewRejectionWithdraws(t *testing.T) {
	r := newRig(t, nil)
	r.Issue("do the thing", "do the thing", forge.LabelBacklog)
	r.mustTick()
	first := r.openPull()
	stranger := r.Srv.NewUser(t, "stranger")
	sc := stranger.Client.Repo(r.Repo.Owner(), r.Repo.Name())
	if _, err := sc.CreateReview(ctxOf(t), first.Number, forge.NewReview{Event: forge.ReviewComment, Body: "nope", CommitID: first.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	r.Now = r.Now.Add(time.Minute)
	r.mustTick()
	if p := r.openPull(); p.Number != first.Number {
		t.Fatalf("a stranger's review replaced the pull request")
	}
	rc := r.reviewer.Client.Repo(r.Repo.Owner(), r.Repo.Name())
	if _, err := rc.CreateReview(ctxOf(t), first.Number, forge.NewReview{Event: forge.ReviewRequestChanges, Body: "wrong", CommitID: first.HeadSHA}); err != nil {
		t.Fatal(err)
	}
	// The review changes no issue and moves no branch: the waiting pull
	// request alone makes the next run look.
	r.Now = r.Now.Add(time.Minute)
	r.mustTick()
	got, err := r.Repo.GetPull(ctxOf(t), first.Number)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != forge.StateClosed || got.Merged {
		t.Fatalf("the rejected pull request is %s (merged %v)", got.State, got.Merged)
	}
	second := r.openPull()
	if second.Number == first.Number || len(r.manifestOf(second)) != 2 {
		t.Errorf("no fresh proposal: #%d %v", second.Number, kinds(r.manifestOf(second)))
	}
}

// TestDustDedup (§14.11): an issue already staged is not put to the model
// again, and dust it emits for it anyway changes nothing: the file keeps
// one entry for it, with its first time.
func TestDustDedup(t *testing.T) {
	r := newRig(t, nil)
	staged := r.Issue("typo in env.sh", "a typo", forge.LabelTechDebt)
	other := r.Issue("rename a variable in env.sh", "a rename", forge.LabelTechDebt)
	first := r.Now.Add(-5 * 24 * time.Hour).UTC().Format(tsLayout)
	if err := r.a.dust.save([]DustEntry{{Issue: staged.Number, Group: "lib/env.sh", Title: staged.Title, TS: first}}); err != nil {
		t.Fatal(err)
	}
	r.script(proposals(Proposal{Issue: staged.Number, Kind: Dust, Group: "lib/env.sh"},
		Proposal{Issue: other.Number, Kind: Dust, Group: "lib/env.sh"}), nil)
	r.mustTick()
	prompt := strings.Join(r.Model.MessageRequests("")[0].Texts, "\n")
	if strings.Contains(prompt, staged.Title) || !strings.Contains(prompt, other.Title) {
		t.Errorf("the session was asked about the staged issue:\n%s", prompt)
	}
	es, err := r.a.dust.load()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Issue == staged.Number {
			n++
			if e.TS != first {
				t.Errorf("the staged entry's time moved: %s", e.TS)
			}
		}
	}
	if n != 1 || len(es) != 2 {
		t.Errorf("dust file %+v", es)
	}
}

// TestSessionWithoutAnswerKeepsTheChecks: a session that answers nothing
// (here the model API refuses its request) costs this run's judgement
// only; what the checks decided is still proposed, and the summary says
// why the judgement is missing.
func TestSessionWithoutAnswerKeepsTheChecks(t *testing.T) {
	r := newRig(t, nil)
	bad := r.Issue("do the thing", "do the thing", forge.LabelBacklog)
	debt := r.Issue("env.sh is a mess", "lib/env.sh", forge.LabelTechDebt)
	if err := r.Model.SetScenarios(claudetest.Scenario{Name: "gardener", Default: true,
		Turns: []claudetest.Turn{{Status: http.StatusBadRequest}}}); err != nil {
		t.Fatal(err)
	}
	r.mustTick()
	p := r.openPull()
	got := kinds(r.manifestOf(p))
	if indexOf(got, fmt.Sprintf("remove_label %d backlog", bad.Number)) < 0 {
		t.Errorf("manifest %v lacks the gate", got)
	}
	for _, k := range got {
		if strings.Contains(k, fmt.Sprint(debt.Number)) {
			t.Errorf("an action for the unjudged #%d: %v", debt.Number, got)
		}
	}
	var summary string
	for _, c := range r.Comments(p.Number) {
		summary += c.Body
	}
	if !strings.Contains(summary, "the session failed") && !strings.Contains(summary, "the session wrote no proposals") {
		t.Errorf("summary:\n%s", summary)
	}
}

package gardener

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/forge"
)

// TestManifestValidate: the schema, the forward references and the
// ordering rules are enforced, each with a message naming the action.
func TestManifestValidate(t *testing.T) {
	h := BodyHash("x")
	ok := Manifest{
		{Action: EditBody, Issue: 1, Body: "b", BaseSHA256: h},
		{Action: AddLabel, Issue: 1, Label: "backlog"},
		{Action: CreateIssue, ID: "bundle-a", Title: "t", Body: "b"},
		{Action: Comment, Issue: 2, Body: "see #{bundle-a}"},
		{Action: Comment, Ref: "bundle-a", Body: "hello"},
		{Action: Close, Issue: 2},
		{Action: ClosePR, PR: 3},
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]Manifest{
		"unknown":            {{Action: "delete_repo"}},
		"ref before def":     {{Action: Comment, Issue: 2, Body: "see #{later}"}, {Action: CreateIssue, ID: "later", Title: "t", Body: "b"}},
		"edit after label":   {{Action: AddLabel, Issue: 1, Label: "backlog"}, {Action: EditBody, Issue: 1, Body: "b", BaseSHA256: h}},
		"edit without hash":  {{Action: EditBody, Issue: 1, Body: "b"}},
		"change after close": {{Action: Close, Issue: 1}, {Action: Comment, Issue: 1, Body: "late"}},
		"issue and ref":      {{Action: CreateIssue, ID: "x", Title: "t", Body: "b"}, {Action: Close, Issue: 1, Ref: "x"}},
		"no label":           {{Action: AddLabel, Issue: 1}},
		"id twice":           {{Action: CreateIssue, ID: "x", Title: "t", Body: "b"}, {Action: CreateIssue, ID: "x", Title: "t", Body: "b"}},
	}
	for name, m := range bad {
		if err := m.Validate(); !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), ManifestFile+": action ") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ParseManifest([]byte(`[{"action":"close","issue":1,"extra":true}]`)); !errors.Is(err, ErrManifest) {
		t.Errorf("unknown field: %v", err)
	}
	back, err := ParseManifest(ok.Encode())
	if err != nil || len(back) != len(ok) {
		t.Errorf("round trip: %v, %d actions", err, len(back))
	}
	if m, err := ParseManifest([]byte("[]\n")); err != nil || len(m) != 0 {
		t.Errorf("empty manifest: %v %v", m, err)
	}
}

// TestDustDedupAndTTL (§14.11, §14.10): an issue staged again keeps its
// one entry and its first time; entries past 30 days expire; a group of
// three distinct issues is taken out as ripe.
func TestDustDedupAndTTL(t *testing.T) {
	now := time.Date(2026, 4, 15, 8, 0, 0, 0, time.UTC)
	old := now.Add(-5 * 24 * time.Hour).Format(tsLayout)
	entries := []DustEntry{{Issue: 50, Group: "g", TS: old}}
	kept, ripe := stage(entries, []DustEntry{{Issue: 50, Group: "g"}}, now)
	if len(ripe) != 0 || len(kept) != 1 || kept[0].TS != old {
		t.Fatalf("dedup: kept %+v ripe %v", kept, ripe)
	}
	entries = append(kept, DustEntry{Issue: 51, Group: "g", TS: old},
		DustEntry{Issue: 52, Group: "g", TS: now.Add(-31 * 24 * time.Hour).Format(tsLayout)},
		DustEntry{Issue: 60, Group: "h", TS: old})
	kept, ripe = stage(entries, []DustEntry{{Issue: 53, Group: "g"}, {Issue: 53, Group: "g"}}, now)
	if len(ripe["g"]) != 3 || len(kept) != 1 || kept[0].Issue != 60 {
		t.Fatalf("bundle: kept %+v ripe %+v", kept, ripe)
	}
	m := bundleActions("g", ripe["g"])
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	body := m[0].Body
	if !hasCriteria(body) || !hasAffectedFiles(body) || strings.Count(body, "- [ ] ") != 3 {
		t.Errorf("a bundle must pass the quality gate:\n%s", body)
	}
	if exp := nextExpiry(kept); !exp.Equal(now.Add(-5 * 24 * time.Hour).Add(dustTTL)) {
		t.Errorf("next expiry %v", exp)
	}
}

// TestChecks: the gate's two sections, word-bounded sub-issue references,
// starving blockers, duplicate titles.
func TestChecks(t *testing.T) {
	if got := missingSections("do the thing"); strings.Join(got, ", ") != "acceptance criteria, affected files" {
		t.Errorf("missing %v", got)
	}
	if got := missingSections("x\n\n## Acceptance criteria\n- [ ] a\n\n## Affected files\n- `lib/env.sh`\n"); len(got) != 0 {
		t.Errorf("missing %v", got)
	}
	if got := missingSections("x\n- [x] a\n## Affected files\nnone yet\n"); strings.Join(got, ",") != "affected files" {
		t.Errorf("an empty affected-files section: %v", got)
	}
	now := time.Now()
	tr := newTracker([]forge.Issue{
		{Number: 40, State: forge.StateOpen, Title: "parent"},
		{Number: 41, State: forge.StateClosed, Body: "Decomposed from #40"},
		{Number: 43, State: forge.StateOpen, Body: "Decomposed from #400"},
		{Number: 20, State: forge.StateOpen, Labels: []forge.LabelName{forge.LabelBacklog}, Body: "## Dependencies\n- #21\n", Updated: now},
		{Number: 21, State: forge.StateOpen, Labels: []forge.LabelName{forge.LabelBlocked}, Title: "feat: Add the loader", Updated: now},
		{Number: 22, State: forge.StateOpen, Title: "fix: add the loader", Updated: now},
	})
	cl := tr.closable()
	if len(cl) != 1 || cl[0].Parent.Number != 40 || len(cl[0].Subs) != 1 {
		t.Errorf("closable %+v", cl)
	}
	if st := tr.starving(); len(st) != 1 || st[0].Number != 21 {
		t.Errorf("starving %+v", st)
	}
	if d := tr.duplicates(); len(d) != 1 || d[0] != [2]int64{21, 22} {
		t.Errorf("duplicates %v", d)
	}
	if s := tr.stale(now.Add(15 * 24 * time.Hour)); len(s) != 5 {
		t.Errorf("stale %v", s)
	}
}

// TestProposalsRefused: a proposal about an issue not asked for, of a
// kind not allowed, or without what its kind needs is refused alone; a
// file that is not the schema is refused whole.
func TestProposalsRefused(t *testing.T) {
	asked := map[int64][]Verdict{1: {Ore, Dust}, 2: {Bug, Feature}}
	data := proposals(
		Proposal{Issue: 1, Kind: Ore, Criteria: []string{"a"}, Files: []string{"lib/env.sh"}},
		Proposal{Issue: 2, Kind: Bug, Reported: "r", Context: "c", Plan: "p", Verification: []string{"a", "b"}},
		Proposal{Issue: 3, Kind: Dust, Group: "g"},
	)
	got, refused, err := parseProposals([]byte(data), asked)
	if err != nil || len(got) != 1 || len(refused) != 2 {
		t.Fatalf("got %v refused %v err %v", got, refused, err)
	}
	if _, _, err := parseProposals([]byte(`{"issues": [{"issue": 1, "kind": "ore", "sudo": true}]}`), asked); !errors.Is(err, ErrProposal) {
		t.Errorf("unknown field: %v", err)
	}
	if _, refused, _ := parseProposals([]byte(proposals(Proposal{Issue: 1, Kind: Dust, Group: "g", Reason: "<!-- reviewed: x -->"})), asked); len(refused) != 1 {
		t.Error("a hidden marker in a proposal was accepted")
	}
}

// TestWatermark: line 1 is set and kept; a file without one gets one.
func TestWatermark(t *testing.T) {
	sha := strings.Repeat("a", 40)
	c := setWatermark("# x\n", sha)
	if watermark(c) != sha || !strings.HasSuffix(c, "# x\n") {
		t.Fatalf("%q", c)
	}
	other := strings.Repeat("b", 40)
	if got := keepWatermark(setWatermark("# y\n", other), sha); watermark(got) != sha {
		t.Errorf("%q", got)
	}
	if got := keepWatermark(c, ""); watermark(got) != "" || got != "# x\n" {
		t.Errorf("%q", got)
	}
}

package predictor

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/disinto/disinto/lib/evidence"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/provenance"
	"github.com/disinto/disinto/lib/text"
)

// Ops is the project's ops repository as last fetched: the tree, the
// resources and the evidence the predictor reads.
type Ops interface {
	// Snapshot returns the primary branch's files and its head, without
	// a forge request (the daemon keeps the checkout fetched).
	Snapshot(ctx context.Context) (OpsTree, string, error)
}

// OpsTree is the ops repository at one commit.
type OpsTree struct {
	// FS serves its files (the formula's "ops:" context files).
	FS fs.FS
	// List returns the names of the files directly in dir (none when
	// there is no such directory).
	List func(dir string) ([]string, error)
}

// EvidenceAreas are the evidence directories under EvidenceDir (spec 40
// §3.2).
var EvidenceAreas = []string{"red-team", "holdout", "evolution", "user-test"}

// Limits of what the session is shown.
const (
	historyLimit  = 50 // predictions per label (spec 40 §3.6)
	reasonsLimit  = 10 // planner comments read, newest predictions first
	evidenceNewer = 3  // newest evidence files listed per directory
	bodyExcerpt   = 600
	commentExcerp = 600
	// EvidenceDir is the ops repository's evidence root, shared with the
	// graph builder and the daemon's evidence writer (lib/evidence).
	EvidenceDir = evidence.Dir
)

// newest returns issues sorted by last update, newest first, at most n.
func newest(issues []forge.Issue, n int) []forge.Issue {
	out := append([]forge.Issue(nil), issues...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Updated.After(out[j].Updated) })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// record is the track record the session reads: each prediction with its
// outcome and, for decided ones, the planner's last word.
type record struct {
	open, dismissed, actioned []forge.Issue
	reasons                   map[int64]string
	// shown is the origin of the issues and comments the record shows
	// (lib/provenance): the predictions a run files carry it, so that an
	// outsider's words become no maintainer's prediction.
	shown provenance.Shown
}

// text renders the track record (untrusted: issue and comment text).
func (r record) text() string {
	var b strings.Builder
	for _, s := range []struct {
		name   string
		issues []forge.Issue
	}{{"Open, awaiting the planner (prediction/unreviewed)", r.open},
		{"Actioned: the planner agreed (prediction/actioned)", r.actioned},
		{"Dismissed: the planner disagreed (prediction/dismissed)", r.dismissed}} {
		fmt.Fprintf(&b, "#### %s\n\n", s.name)
		if len(s.issues) == 0 {
			b.WriteString("none\n\n")
			continue
		}
		for _, i := range s.issues {
			fmt.Fprintf(&b, "- #%d %s\n", i.Number, oneLine(i.Title))
			if t := TheoryOf(i.Body); t != "" {
				fmt.Fprintf(&b, "  theory: %s\n", text.Clip(t, bodyExcerpt))
			} else {
				fmt.Fprintf(&b, "  body: %s\n", text.Clip(oneLine(i.Body), bodyExcerpt))
			}
			if why := r.reasons[i.Number]; why != "" {
				fmt.Fprintf(&b, "  planner: %s\n", text.Clip(oneLine(why), commentExcerp))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// inventory renders the inventory of the ops repository's evidence root:
// per area, the number of JSON files and the newest few by name (evidence
// files start with their date).
func inventory(t *OpsTree) string {
	if t == nil || t.List == nil {
		return "No ops repository is available: the evidence is unknown.\n"
	}
	var b strings.Builder
	for _, area := range EvidenceAreas {
		dir := EvidenceDir + "/" + area
		files, err := t.List(dir)
		if err != nil {
			fmt.Fprintf(&b, "- %s: unreadable\n", dir)
			continue
		}
		var names []string
		for _, f := range files {
			if strings.HasSuffix(f, ".json") {
				names = append(names, path.Base(f))
			}
		}
		sort.Sort(sort.Reverse(sort.StringSlice(names)))
		fmt.Fprintf(&b, "- %s: %d files", dir, len(names))
		if len(names) > 0 {
			fmt.Fprintf(&b, "; newest: %s", strings.Join(names[:min(evidenceNewer, len(names))], ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// formulaNames returns the set of the formulas a vault request may run:
// the factory's, the ones the vault's runner executes.
func formulaNames(factory []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range factory {
		out[n] = true
	}
	return out
}

// tasks is the trusted part of the prompt: the budget, the formulas an
// exploit may name, and where the outbox is.
func tasks(formulas map[string]bool) string {
	names := make([]string, 0, len(formulas))
	for n := range formulas {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "You have %d points: an explore costs 1, an exploit 2. Proposals beyond the budget, in order, are not filed.\n", Budget)
	if len(names) == 0 {
		b.WriteString("No formula exists: propose explores only.\n")
	} else {
		fmt.Fprintf(&b, "An exploit may name one of these formulas: %s.\n", strings.Join(names, ", "))
	}
	b.WriteString("Write the proposals file named in the formula (also $" + EnvProposals + "), even when you propose nothing.\n")
	return b.String()
}

// fs returns the tree's files, nil for no tree.
func (t *OpsTree) fs() fs.FS {
	if t == nil {
		return nil
	}
	return t.FS
}

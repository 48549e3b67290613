package gardener

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/provenance"
)

// Dust bundling (spec 30 §5): the model classifies, the accumulator keeps
// the entries, expires them and bundles a group once it holds enough
// distinct issues.
const (
	dustTTL    = 30 * 24 * time.Hour
	dustBundle = 3
	tsLayout   = "2006-01-02T15:04:05Z"
)

// DustEntry is one staged dust issue, a line of dust.jsonl.
type DustEntry struct {
	Issue  int64  `json:"issue"`
	Group  string `json:"group"`
	Title  string `json:"title"`
	Reason string `json:"reason"`
	TS     string `json:"ts"`
	// Origin is the least trusted origin of the issue and of the session
	// that judged it dust (lib/provenance); an entry of an earlier
	// release without one counts as an outsider's.
	Origin provenance.Origin `json:"origin,omitempty"`
}

// dustFile is the accumulator under the gardener's state dir.
type dustFile struct{ path string }

// load reads the entries; a missing file holds none, a malformed line is
// dropped.
func (d dustFile) load() ([]DustEntry, error) {
	data, err := os.ReadFile(d.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []DustEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var e DustEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Issue > 0 && e.Group != "" {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

func (d dustFile) save(es []DustEntry) error {
	var b bytes.Buffer
	for _, e := range es {
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(d.path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(d.path, b.Bytes(), 0o600)
}

// stage adds this run's dust to the entries (an issue already staged
// keeps its first entry and time), drops entries past the TTL, and takes
// out the groups with at least dustBundle distinct issues, which it
// returns by group in name order.
func stage(entries, fresh []DustEntry, now time.Time) (kept []DustEntry, ripe map[string][]DustEntry) {
	have := map[int64]bool{}
	for _, e := range entries {
		have[e.Issue] = true
	}
	for _, e := range fresh {
		if have[e.Issue] {
			continue
		}
		have[e.Issue] = true
		e.TS = now.UTC().Format(tsLayout)
		entries = append(entries, e)
	}
	cutoff := now.Add(-dustTTL).UTC().Format(tsLayout)
	groups := map[string][]DustEntry{}
	var live []DustEntry
	for _, e := range entries {
		if e.TS < cutoff {
			continue
		}
		live = append(live, e)
		groups[e.Group] = append(groups[e.Group], e)
	}
	ripe = map[string][]DustEntry{}
	for g, es := range groups {
		if len(es) >= dustBundle {
			ripe[g] = es
		}
	}
	for _, e := range live {
		if _, gone := ripe[e.Group]; !gone {
			kept = append(kept, e)
		}
	}
	return kept, ripe
}

// nextExpiry is when the oldest entry falls out of the TTL (zero: none).
func nextExpiry(es []DustEntry) time.Time {
	var t time.Time
	for _, e := range es {
		ts, err := time.Parse(tsLayout, e.TS)
		if err != nil {
			continue
		}
		if exp := ts.Add(dustTTL); t.IsZero() || exp.Before(t) {
			t = exp
		}
	}
	return t
}

// bundleActions are the manifest actions of one ripe group: the bundle
// issue (one checkbox per source, the group as affected file, the origin
// marker), then a comment and a close per source issue that refer to it.
func bundleActions(group string, es []DustEntry) Manifest {
	sort.Slice(es, func(i, j int) bool { return es[i].Issue < es[j].Issue })
	id := "bundle-" + strings.Trim(nonWordRe.ReplaceAllString(strings.ToLower(group), "-"), "-")
	if len(id) > 60 {
		id = id[:60]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Trivial cleanups of %s, bundled so that they cost one factory cycle instead of %d.\n\n", group, len(es))
	b.WriteString("## Affected files\n\n")
	file := group
	if !strings.Contains(file, "/") && !extRe.MatchString(file) {
		file += "/" // a subsystem: its directory
	}
	fmt.Fprintf(&b, "- `%s`\n\n", file)
	b.WriteString("## Acceptance criteria\n\n")
	origins := make([]provenance.Origin, 0, len(es))
	from := make([]string, 0, len(es))
	for _, e := range es {
		fmt.Fprintf(&b, "- [ ] #%d %s\n", e.Issue, forge.Neutralise(e.Title))
		origins = append(origins, e.Origin)
		from = append(from, fmt.Sprintf("issue-%d", e.Issue))
	}
	// The bundle is made from its issues' text and the sessions' groups:
	// it takes the least trusted origin of them.
	b.WriteString("\n" + provenance.Marker(provenance.Least(origins...), from...) + "\n")
	m := Manifest{{Action: CreateIssue, ID: id, Title: "fix: bundled dust cleanup — " + group, Body: b.String(), Labels: []string{string(forge.LabelBacklog)}}}
	for _, e := range es {
		m = append(m,
			Action{Action: Comment, Issue: e.Issue, Body: fmt.Sprintf("Bundled into the dust cleanup issue #{%s} for `%s`.", id, group)},
			Action{Action: Close, Issue: e.Issue, Reason: "bundled into dust cleanup for " + group})
	}
	return m
}

package graph

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// DefaultDepth bounds how far a change travels in Affected.
const DefaultDepth = 6

// Alert is a changed file that traces to a prerequisite already done.
type Alert struct {
	Prereq string `json:"prereq"`
	Label  string `json:"label"`
	Alert  string `json:"alert"`
}

// AlertDone is the text of an Alert.
const AlertDone = "PR modifies file tracing to a DONE prerequisite"

// Affected is what a change to some files reaches.
type Affected struct {
	Files         []string `json:"files"`
	Objectives    []string `json:"affected_objectives"`
	Prerequisites []string `json:"affected_prerequisites"`
	Alerts        []Alert  `json:"alerts"`
}

// Affected returns the objectives and prerequisites reachable from the
// nodes the files stand for along ImpactRelations, at most depth edges
// away (DefaultDepth when depth <= 0), and an alert for each such
// prerequisite that is done.
func (b *Built) Affected(files []string, depth int) Affected {
	if depth <= 0 {
		depth = DefaultDepth
	}
	a := Affected{Files: slices.Clone(files), Objectives: []string{}, Prerequisites: []string{}, Alerts: []Alert{}}
	if a.Files == nil {
		a.Files = []string{}
	}
	var start []string
	for _, f := range files {
		start = append(start, b.Mapper.Nodes(f)...)
	}
	for id := range b.Graph.Reach(start, depth, ImpactRelations...) {
		n := b.Graph.nodes[id]
		switch n.Type {
		case TypeObjective:
			a.Objectives = append(a.Objectives, id)
		case TypePrereq:
			a.Prerequisites = append(a.Prerequisites, id)
		}
	}
	slices.Sort(a.Objectives)
	slices.Sort(a.Prerequisites)
	for _, id := range a.Prerequisites {
		if n := b.Graph.nodes[id]; n.Done {
			a.Alerts = append(a.Alerts, Alert{Prereq: id, Label: n.Label, Alert: AlertDone})
		}
	}
	return a
}

// Stats counts the graph.
type Stats struct {
	Nodes int `json:"nodes"`
	Edges int `json:"edges"`
}

// Report is the graph's report (spec 40 §5.4). Lists are never null.
type Report struct {
	Generated      string             `json:"generated"`
	Sources        Sources            `json:"sources"`
	Stats          Stats              `json:"stats"`
	Objectives     []ObjectiveSummary `json:"objectives"`
	Orphans        []Orphan           `json:"orphans"`
	Cycles         []Cycle            `json:"cycles"`
	CyclesTotal    int                `json:"cycles_total"`
	Disconnected   []Cluster          `json:"disconnected"`
	ThinObjectives []Thin             `json:"thin_objectives"`
	Bottlenecks    []Bottleneck       `json:"bottlenecks"`
	// Affected is set in changed-files mode only.
	Affected *Affected `json:"affected,omitempty"`
}

// ObjectiveSummary is one objective of the tree and its prerequisites.
type ObjectiveSummary struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Done   int    `json:"prerequisites_done"`
	Total  int    `json:"prerequisites"`
}

// ReportOptions tunes Report.
type ReportOptions struct {
	// Now is the report's time; default time.Now.
	Now time.Time
	// MaxCycles caps the cycles listed; default DefaultMaxCycles.
	MaxCycles int
	// Bottlenecks turns on the betweenness centrality, which costs
	// nodes × edges.
	Bottlenecks bool
	// Changed are the files of a change; with any, the report has
	// Affected.
	Changed []string
	// Depth bounds Affected; default DefaultDepth.
	Depth int
}

// Report analyses the graph.
func (b *Built) Report(o ReportOptions) Report {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.MaxCycles == 0 {
		o.MaxCycles = DefaultMaxCycles
	}
	nodes, edges := b.Graph.Len()
	r := Report{Generated: o.Now.UTC().Format("2006-01-02T15:04:05Z"), Sources: b.Sources,
		Stats: Stats{Nodes: nodes, Edges: edges}, Objectives: []ObjectiveSummary{},
		Orphans: b.Graph.Orphans(), Disconnected: b.Graph.Disconnected(),
		ThinObjectives: b.Graph.ThinObjectives(), Bottlenecks: []Bottleneck{}}
	if r.Sources.Errors == nil {
		r.Sources.Errors = []string{}
	}
	for _, ob := range b.Objectives {
		s := ObjectiveSummary{ID: ob.ID(), Name: ob.Name, Status: ob.Status, Total: len(ob.Prereqs)}
		for _, p := range ob.Prereqs {
			if p.Done {
				s.Done++
			}
		}
		r.Objectives = append(r.Objectives, s)
	}
	r.Cycles, r.CyclesTotal = b.Graph.Cycles(o.MaxCycles)
	if r.Cycles == nil {
		r.Cycles = []Cycle{}
	}
	if o.Bottlenecks {
		r.Bottlenecks = b.Graph.Bottlenecks()
	}
	if len(o.Changed) > 0 {
		a := b.Affected(o.Changed, o.Depth)
		r.Affected = &a
	}
	return r
}

// WriteText renders the report for a person.
func (r Report) WriteText(w io.Writer) error {
	var s strings.Builder
	fmt.Fprintf(&s, "Structural graph, %s: %d nodes, %d edges\n", r.Generated, r.Stats.Nodes, r.Stats.Edges)
	fmt.Fprintf(&s, "Sources: forge %s, tree %s, evidence %s, mappings %s\n", r.Sources.Forge, r.Sources.Tree, r.Sources.Evidence, r.Sources.Mappings)
	if r.Sources.ForgeError != "" {
		fmt.Fprintf(&s, "  forge: %s\n", r.Sources.ForgeError)
	}
	for _, e := range r.Sources.Errors {
		fmt.Fprintf(&s, "  error: %s\n", e)
	}
	part(&s, "Objectives", len(r.Objectives), func() {
		for _, o := range r.Objectives {
			fmt.Fprintf(&s, "  %s  %s (%d/%d prerequisites done)\n", orDash(o.Status), o.Name, o.Done, o.Total)
		}
	})
	part(&s, "Cycles (blocks)", r.CyclesTotal, func() {
		for _, c := range r.Cycles {
			fmt.Fprintf(&s, "  %s  (%d nodes)\n", strings.Join(c.Chain, " → "), len(c.Members))
		}
		if r.CyclesTotal > len(r.Cycles) {
			fmt.Fprintf(&s, "  … and %d more\n", r.CyclesTotal-len(r.Cycles))
		}
	})
	part(&s, "Orphans", len(r.Orphans), func() {
		for _, o := range r.Orphans {
			fmt.Fprintf(&s, "  %s: %s\n", o.ID, o.Reason)
		}
	})
	part(&s, "Disconnected", len(r.Disconnected), func() {
		for _, c := range r.Disconnected {
			fmt.Fprintf(&s, "  %s (%d): %s\n", strings.Join(c.Cluster, ", "), c.Size, c.Reason)
		}
	})
	part(&s, "Thin objectives", len(r.ThinObjectives), func() {
		for _, t := range r.ThinObjectives {
			fmt.Fprintf(&s, "  %s  %s: %d evidence, %d issues\n", orDash(t.Status), t.ID, t.EvidenceCount, t.IssueCount)
		}
	})
	part(&s, "Bottlenecks", len(r.Bottlenecks), func() {
		for _, b := range r.Bottlenecks {
			fmt.Fprintf(&s, "  %s  %.4f (%d dependents)\n", b.ID, b.Centrality, b.Dependents)
		}
	})
	if a := r.Affected; a != nil {
		fmt.Fprintf(&s, "\nChanged files: %s\n", strings.Join(a.Files, ", "))
		fmt.Fprintf(&s, "  affected objectives: %s\n", orNone(a.Objectives))
		fmt.Fprintf(&s, "  affected prerequisites: %s\n", orNone(a.Prerequisites))
		for _, al := range a.Alerts {
			fmt.Fprintf(&s, "  alert: %s (%s): %s\n", al.Prereq, al.Label, al.Alert)
		}
	}
	_, err := io.WriteString(w, s.String())
	return err
}

// part writes a titled part, or "none" under the title.
func part(s *strings.Builder, title string, n int, body func()) {
	fmt.Fprintf(s, "\n%s: %d\n", title, n)
	if n > 0 {
		body()
	}
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// orNone joins ids, or says none.
func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// Text renders what a change affects for a prompt: the objectives, the
// prerequisites and the alerts, one per line; "" when it reaches none.
func (a Affected) Text() string {
	if len(a.Objectives) == 0 && len(a.Prerequisites) == 0 {
		return ""
	}
	var s strings.Builder
	fmt.Fprintf(&s, "Affected objectives: %s\n", orNone(a.Objectives))
	fmt.Fprintf(&s, "Affected prerequisites: %s\n", orNone(a.Prerequisites))
	for _, al := range a.Alerts {
		fmt.Fprintf(&s, "Alert: %s (%s): %s\n", al.Prereq, al.Label, al.Alert)
	}
	return s.String()
}

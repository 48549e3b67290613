// Package graph is the project's structural graph: typed nodes for the
// planner's prerequisite tree, the issues (open and closed), the labels,
// the agents, the formulas, the evidence and the files, joined by typed
// edges, and the analyses the planner, the predictor and the reviewer read
// from it: directed reachability with a depth limit, the strongly
// connected components of the blocks subgraph, orphans, thin objectives,
// bottlenecks and the objectives a change to some files affects.
//
// It replaces the reference's lib/build-graph.py (spec 40 §5) and fixes
// its weaknesses (§5.5): the tree and the evidence are read from one
// configured place (the ops repository by default), agents and labels come
// from explicit lists, files map to nodes explicitly (infrastructure
// files included), cycles are found in linear time and capped, and the
// report says whether the forge could be read at all.
//
// Issue and file text is untrusted input: parsing never panics and its
// work is bounded by the text's length.
package graph

import (
	"cmp"
	"slices"
)

// Type is the kind of a node.
type Type string

// The node types.
const (
	TypeObjective  Type = "objective"
	TypePrereq     Type = "prerequisite"
	TypeIssue      Type = "issue"
	TypeLabel      Type = "label"
	TypeAgent      Type = "agent"
	TypeFormula    Type = "formula"
	TypeEvidence   Type = "evidence"
	TypeDocSection Type = "doc-section"
	TypeInfra      Type = "infrastructure"
	TypeFile       Type = "file"
)

// Relation is the kind of an edge.
type Relation string

// The edge relations (spec 40 §5.3, plus supports for files).
const (
	// RelBlocks: a prerequisite blocks its objective; an issue blocks
	// the issues that depend on it.
	RelBlocks Relation = "blocks"
	// RelImplements: an issue implements an objective or a prerequisite.
	RelImplements Relation = "implements"
	// RelReferences: an issue mentions a VISION section or another issue.
	RelReferences Relation = "references"
	// RelDefines: an AGENTS.md section defines an agent.
	RelDefines Relation = "defines"
	// RelExecutes: an agent runs a formula.
	RelExecutes Relation = "executes"
	// RelProduces: a formula sets a label.
	RelProduces Relation = "produces"
	// RelEvidences: an evidence file backs a prerequisite.
	RelEvidences Relation = "evidences"
	// RelUsesLabel: an issue carries a label.
	RelUsesLabel Relation = "uses-label"
	// RelSupports: a file, formula, agent or piece of infrastructure
	// that a prerequisite or an issue names is what it relies on.
	RelSupports Relation = "supports"
)

// ImpactRelations are the edges a change travels along towards the
// objectives: what supports, evidences, implements, blocks or is run by
// a node is affected when it changes.
var ImpactRelations = []Relation{RelSupports, RelExecutes, RelEvidences, RelImplements, RelBlocks}

// Node is one node of the graph.
type Node struct {
	ID   string `json:"id"`
	Type Type   `json:"type,omitempty"`
	// Label is the human text: an objective's name, an issue's title.
	Label string `json:"label,omitempty"`
	// Status is an objective's Status line (READY, BLOCKED, DONE) or an
	// issue's state (open, closed).
	Status string `json:"status,omitempty"`
	// Done is a prerequisite's checkbox.
	Done bool `json:"done,omitempty"`
	// Category is an evidence file's first path segment.
	Category string `json:"category,omitempty"`
}

// Edge is one directed, typed edge.
type Edge struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	Relation Relation `json:"relation"`
}

// Graph is a directed multigraph of typed nodes and edges; one edge per
// (from, to, relation). It is not safe for concurrent mutation; once
// built it may be read concurrently.
type Graph struct {
	nodes map[string]*Node
	out   map[string][]Edge
	in    map[string][]Edge
	seen  map[Edge]bool
}

// New returns an empty graph.
func New() *Graph {
	return &Graph{nodes: map[string]*Node{}, out: map[string][]Edge{}, in: map[string][]Edge{}, seen: map[Edge]bool{}}
}

// Add adds n, or fills in the fields of the node with n's id that are
// still empty (a node first made implicitly by an edge gets its type).
func (g *Graph) Add(n Node) *Node {
	if old, ok := g.nodes[n.ID]; ok {
		if old.Type == "" {
			old.Type = n.Type
		}
		if old.Label == "" {
			old.Label = n.Label
		}
		if old.Status == "" {
			old.Status = n.Status
		}
		if old.Category == "" {
			old.Category = n.Category
		}
		old.Done = old.Done || n.Done
		return old
	}
	c := n
	g.nodes[n.ID] = &c
	return &c
}

// Link adds the edge from → to; nodes it names that do not exist yet are
// made without a type. Self-loops are dropped.
func (g *Graph) Link(from, to string, rel Relation) {
	if from == to || from == "" || to == "" {
		return
	}
	e := Edge{From: from, To: to, Relation: rel}
	if g.seen[e] {
		return
	}
	g.seen[e] = true
	for _, id := range []string{from, to} {
		if _, ok := g.nodes[id]; !ok {
			g.nodes[id] = &Node{ID: id}
		}
	}
	g.out[from] = append(g.out[from], e)
	g.in[to] = append(g.in[to], e)
}

// Node returns the node with id; ok is false when there is none.
func (g *Graph) Node(id string) (Node, bool) {
	n, ok := g.nodes[id]
	if !ok {
		return Node{}, false
	}
	return *n, true
}

// Nodes returns every node, by id.
func (g *Graph) Nodes() []Node {
	out := make([]Node, 0, len(g.nodes))
	for _, n := range g.nodes {
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b Node) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// OfType returns the ids of the nodes of type t, sorted.
func (g *Graph) OfType(t Type) []string {
	var out []string
	for id, n := range g.nodes {
		if n.Type == t {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Edges returns every edge, ordered by from, to and relation.
func (g *Graph) Edges() []Edge {
	out := make([]Edge, 0, len(g.seen))
	for e := range g.seen {
		out = append(out, e)
	}
	slices.SortFunc(out, compareEdges)
	return out
}

// Has reports whether the edge from → to with rel exists.
func (g *Graph) Has(from, to string, rel Relation) bool {
	return g.seen[Edge{From: from, To: to, Relation: rel}]
}

// Out returns the edges leaving id.
func (g *Graph) Out(id string) []Edge { return slices.Clone(g.out[id]) }

// In returns the edges entering id.
func (g *Graph) In(id string) []Edge { return slices.Clone(g.in[id]) }

// Len returns the number of nodes and edges.
func (g *Graph) Len() (nodes, edges int) { return len(g.nodes), len(g.seen) }

// compareEdges orders edges by from, to and relation.
func compareEdges(a, b Edge) int {
	return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Relation, b.Relation))
}

// relSet is a set of relations; nil means every relation.
type relSet map[Relation]bool

// makeRelSet returns the set of rels, nil when rels is empty.
func makeRelSet(rels []Relation) relSet {
	if len(rels) == 0 {
		return nil
	}
	s := relSet{}
	for _, r := range rels {
		s[r] = true
	}
	return s
}

// has reports whether r is in the set (every relation is in a nil set).
func (s relSet) has(r Relation) bool { return s == nil || s[r] }

// Reach returns the nodes reachable from the nodes in from along edges
// of the given relations (every relation when none is given), at most
// depth edges away (no limit when depth <= 0), with their distance. The
// start nodes that exist are in the result at distance 0.
func (g *Graph) Reach(from []string, depth int, rels ...Relation) map[string]int {
	return g.walk(from, depth, makeRelSet(rels), g.out, func(e Edge) string { return e.To })
}

// ReachBack is Reach against the direction of the edges: the nodes from
// which the start nodes can be reached.
func (g *Graph) ReachBack(from []string, depth int, rels ...Relation) map[string]int {
	return g.walk(from, depth, makeRelSet(rels), g.in, func(e Edge) string { return e.From })
}

// walk is a breadth-first search over adj.
func (g *Graph) walk(from []string, depth int, rels relSet, adj map[string][]Edge, next func(Edge) string) map[string]int {
	dist := map[string]int{}
	var queue []string
	for _, id := range from {
		if _, ok := g.nodes[id]; ok {
			if _, seen := dist[id]; !seen {
				dist[id] = 0
				queue = append(queue, id)
			}
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if depth > 0 && dist[id] >= depth {
			continue
		}
		for _, e := range adj[id] {
			if !rels.has(e.Relation) {
				continue
			}
			n := next(e)
			if _, seen := dist[n]; !seen {
				dist[n] = dist[id] + 1
				queue = append(queue, n)
			}
		}
	}
	return dist
}

package graph

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/disinto/disinto/lib/deps"
)

// DefaultMaxCycles caps the cycles a report lists.
const DefaultMaxCycles = 20

// Cycle is one strongly connected component of the blocks subgraph.
type Cycle struct {
	// Chain is one cycle through the component's first member, starting
	// and ending with it, each node blocking the next.
	Chain []string `json:"chain"`
	// Members are every node of the component, sorted.
	Members  []string `json:"members"`
	Relation Relation `json:"relation"`
}

// Cycles returns the strongly connected components of more than one node
// of the blocks subgraph (Tarjan's algorithm, linear in its size), each
// with one representative cycle, at most max of them (no cap when max <=
// 0), and how many there are in all.
func (g *Graph) Cycles(max int) (cycles []Cycle, total int) {
	ids := map[string]int64{}
	var names []string
	number := func(id string) int64 {
		if n, ok := ids[id]; ok {
			return n
		}
		names = append(names, id)
		ids[id] = int64(len(names))
		return ids[id]
	}
	// deps' edge a → b reads "a depends on b"; here it is "a blocks b",
	// which has the same components and cycles.
	edges := map[int64][]int64{}
	for _, e := range g.Edges() {
		if e.Relation == RelBlocks {
			a, b := number(e.From), number(e.To)
			edges[a] = append(edges[a], b)
		}
	}
	for _, id := range names {
		if _, ok := edges[ids[id]]; !ok {
			edges[ids[id]] = nil
		}
	}
	dg := deps.NewGraph(edges)
	name := func(n int64) string { return names[n-1] }
	for _, scc := range dg.Cycles() {
		members := make([]string, len(scc))
		for i, n := range scc {
			members[i] = name(n)
		}
		slices.Sort(members)
		cycles = append(cycles, Cycle{Members: members, Relation: RelBlocks, Chain: chainThrough(dg, ids[members[0]], name)})
	}
	slices.SortFunc(cycles, func(a, b Cycle) int { return cmp.Compare(a.Members[0], b.Members[0]) })
	total = len(cycles)
	if max > 0 && len(cycles) > max {
		cycles = cycles[:max]
	}
	return cycles, total
}

// chainThrough is dg's shortest cycle through n, by node id.
func chainThrough(dg *deps.Graph, n int64, name func(int64) string) []string {
	path := dg.CycleThrough(n)
	out := make([]string, len(path))
	for i, m := range path {
		out[i] = name(m)
	}
	return out
}

// Orphan is a node nothing links to or from.
type Orphan struct {
	ID     string `json:"id"`
	Type   Type   `json:"type"`
	Reason string `json:"reason"`
}

// orphanReasons are the reasons of spec 40 §5.4, by node type.
var orphanReasons = map[Type]string{
	TypeLabel:    "no issue uses this label",
	TypeFormula:  "no agent executes this formula",
	TypeEvidence: "not linked to any prerequisite",
	TypeIssue:    "not connected to any objective or other issue",
}

// Orphans returns the labels, formulas, evidence files and issues with no
// edge at all, by id.
func (g *Graph) Orphans() []Orphan {
	out := []Orphan{}
	for _, n := range g.Nodes() {
		reason, ok := orphanReasons[n.Type]
		if ok && len(g.out[n.ID]) == 0 && len(g.in[n.ID]) == 0 {
			out = append(out, Orphan{ID: n.ID, Type: n.Type, Reason: reason})
		}
	}
	return out
}

// Cluster is a weakly connected part of the graph with no objective.
type Cluster struct {
	// Cluster is its first ten issues, formulas and evidence files.
	Cluster []string `json:"cluster"`
	Size    int      `json:"size"`
	Reason  string   `json:"reason"`
}

// Disconnected returns the weakly connected components that hold issues,
// formulas or evidence but no objective; none when the graph has no
// objective at all.
func (g *Graph) Disconnected() []Cluster {
	out := []Cluster{}
	if len(g.OfType(TypeObjective)) == 0 {
		return out
	}
	seen := map[string]bool{}
	for _, n := range g.Nodes() {
		if seen[n.ID] {
			continue
		}
		comp := g.component(n.ID, seen)
		var members []string
		objective := false
		for _, id := range comp {
			switch g.nodes[id].Type {
			case TypeObjective:
				objective = true
			case TypeIssue, TypeFormula, TypeEvidence:
				members = append(members, id)
			}
		}
		if objective || len(members) == 0 {
			continue
		}
		slices.Sort(members)
		out = append(out, Cluster{Cluster: members[:min(10, len(members))], Size: len(members), Reason: "no path to any objective"})
	}
	return out
}

// component returns the weakly connected component of id, marking it in
// seen.
func (g *Graph) component(id string, seen map[string]bool) []string {
	seen[id] = true
	stack, comp := []string{id}, []string{}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		comp = append(comp, n)
		for _, e := range g.out[n] {
			if !seen[e.To] {
				seen[e.To] = true
				stack = append(stack, e.To)
			}
		}
		for _, e := range g.in[n] {
			if !seen[e.From] {
				seen[e.From] = true
				stack = append(stack, e.From)
			}
		}
	}
	return comp
}

// Thin is an objective with little behind it.
type Thin struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	EvidenceCount int    `json:"evidence_count"`
	IssueCount    int    `json:"issue_count"`
}

// ThinObjectives returns the objectives with fewer than two evidence
// files behind them, or that claim DONE or READY with fewer than two
// issues behind them ("behind": reaching the objective along
// ImpactRelations).
func (g *Graph) ThinObjectives() []Thin {
	out := []Thin{}
	for _, id := range g.OfType(TypeObjective) {
		var ev, is int
		for a := range g.ReachBack([]string{id}, 0, ImpactRelations...) {
			switch g.nodes[a].Type {
			case TypeEvidence:
				ev++
			case TypeIssue:
				is++
			}
		}
		st := g.nodes[id].Status
		if ev < 2 || ((st == "DONE" || st == "READY") && is < 2) {
			out = append(out, Thin{ID: id, Status: st, EvidenceCount: ev, IssueCount: is})
		}
	}
	return out
}

// Bottleneck is a node many shortest paths run through.
type Bottleneck struct {
	ID         string  `json:"id"`
	Centrality float64 `json:"centrality"`
	Dependents int     `json:"dependents"`
}

// Bottlenecks returns the nodes of highest betweenness centrality
// (Brandes' algorithm, normalised as for a directed graph), descending,
// while at least 0.05, at most 10; none for a graph under three nodes.
func (g *Graph) Bottlenecks() []Bottleneck {
	out := []Bottleneck{}
	ids := make([]string, 0, len(g.nodes))
	for id := range g.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	n := len(ids)
	if n < 3 {
		return out
	}
	index := make(map[string]int, n)
	for i, id := range ids {
		index[id] = i
	}
	adj := make([][]int, n)
	for i, id := range ids {
		for _, e := range g.out[id] {
			adj[i] = append(adj[i], index[e.To])
		}
	}
	cb := brandes(adj)
	scale := 1 / float64((n-1)*(n-2))
	for i, id := range ids {
		c := math.Round(cb[i]*scale*1e4) / 1e4
		if c >= 0.05 {
			out = append(out, Bottleneck{ID: id, Centrality: c, Dependents: len(g.in[id])})
		}
	}
	slices.SortStableFunc(out, func(a, b Bottleneck) int {
		return cmp.Or(cmp.Compare(b.Centrality, a.Centrality), strings.Compare(a.ID, b.ID))
	})
	return out[:min(10, len(out))]
}

// brandes returns the unnormalised betweenness of every vertex of the
// unweighted directed graph adj.
func brandes(adj [][]int) []float64 {
	n := len(adj)
	cb := make([]float64, n)
	sigma := make([]float64, n)
	dist := make([]int, n)
	delta := make([]float64, n)
	preds := make([][]int, n)
	for s := range n {
		for i := range n {
			sigma[i], dist[i], delta[i], preds[i] = 0, -1, 0, preds[i][:0]
		}
		sigma[s], dist[s] = 1, 0
		order := []int{}
		queue := []int{s}
		for len(queue) > 0 {
			v := queue[0]
			queue = queue[1:]
			order = append(order, v)
			for _, w := range adj[v] {
				if dist[w] < 0 {
					dist[w] = dist[v] + 1
					queue = append(queue, w)
				}
				if dist[w] == dist[v]+1 {
					sigma[w] += sigma[v]
					preds[w] = append(preds[w], v)
				}
			}
		}
		for i := len(order) - 1; i >= 0; i-- {
			w := order[i]
			for _, v := range preds[w] {
				delta[v] += sigma[v] / sigma[w] * (1 + delta[w])
			}
			if w != s {
				cb[w] += delta[w]
			}
		}
	}
	return cb
}

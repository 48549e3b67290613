package deps

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrCycle is wrapped by CycleError.
var ErrCycle = errors.New("dependency cycle")

// CycleError reports a dependency cycle. Path starts and ends with the same
// issue, each issue depending on the next: [3 5 3] means #3 depends on #5 and
// #5 on #3.
type CycleError struct {
	Path []int64
}

// Error implements error.
func (e *CycleError) Error() string {
	parts := make([]string, len(e.Path))
	for i, n := range e.Path {
		parts[i] = "#" + strconv.FormatInt(n, 10)
	}
	return fmt.Sprintf("%v: %s", ErrCycle, strings.Join(parts, " -> "))
}

// Unwrap returns ErrCycle.
func (e *CycleError) Unwrap() error { return ErrCycle }

// StateFunc reports whether issue n is closed. known is false when the state
// could not be determined (the issue does not exist, the forge could not be
// read); an unknown issue counts as open.
type StateFunc func(n int64) (closed, known bool)

// Graph is the dependency graph of a set of issues: an edge from a to b means
// a depends on b. A Graph is immutable after construction and safe for
// concurrent use.
type Graph struct {
	deps  map[int64][]int64 // sorted, unique, no self-loops
	nodes []int64           // every issue that appears, sorted
}

// NewGraph builds a graph from each issue's dependencies. The input is
// copied; duplicate, non-positive and self references are dropped.
func NewGraph(issues map[int64][]int64) *Graph {
	g := &Graph{deps: make(map[int64][]int64, len(issues))}
	seen := map[int64]bool{}
	addNode := func(n int64) {
		if !seen[n] {
			seen[n] = true
			g.nodes = append(g.nodes, n)
		}
	}
	for n, ds := range issues {
		if n <= 0 {
			continue
		}
		addNode(n)
		clean := make([]int64, 0, len(ds))
		for _, d := range ds {
			if d > 0 && d != n {
				clean = append(clean, d)
				addNode(d)
			}
		}
		slices.Sort(clean)
		g.deps[n] = slices.Compact(clean)
	}
	slices.Sort(g.nodes)
	return g
}

// FromBodies builds a graph by parsing each issue's body with ParseFor.
func FromBodies(bodies map[int64]string) *Graph {
	issues := make(map[int64][]int64, len(bodies))
	for n, body := range bodies {
		issues[n] = ParseFor(n, body)
	}
	return NewGraph(issues)
}

// Nodes returns every issue in the graph, including those that only appear as
// a dependency, in ascending order.
func (g *Graph) Nodes() []int64 { return slices.Clone(g.nodes) }

// Deps returns the direct dependencies of issue n in ascending order; nil when
// n has none or is not in the graph.
func (g *Graph) Deps(n int64) []int64 { return slices.Clone(g.deps[n]) }

// Known reports whether n's own dependencies are known, that is whether n was
// one of the issues the graph was built from.
func (g *Graph) Known(n int64) bool {
	_, ok := g.deps[n]
	return ok
}

// Blocking returns the direct dependencies of n that are not closed, in
// ascending order. A dependency whose state is unknown is blocking.
func (g *Graph) Blocking(n int64, isClosed StateFunc) []int64 {
	var out []int64
	for _, d := range g.deps[n] {
		if closed, known := isClosed(d); !known || !closed {
			out = append(out, d)
		}
	}
	return out
}

// Ready reports whether every direct dependency of n is closed. An issue with
// no dependencies is ready.
func (g *Graph) Ready(n int64, isClosed StateFunc) bool {
	return len(g.Blocking(n, isClosed)) == 0
}

// Suggest picks what to work on before n: the lowest-numbered blocking
// dependency of n that is known to be open, whose own dependencies are known
// (it is in the graph) and all closed. ok is false when there is none.
func (g *Graph) Suggest(n int64, isClosed StateFunc) (next int64, ok bool) {
	for _, d := range g.Blocking(n, isClosed) {
		if _, known := isClosed(d); !known || !g.Known(d) {
			continue
		}
		if g.Ready(d, isClosed) {
			return d, true
		}
	}
	return 0, false
}

// Cycle returns one dependency cycle as a path that starts and ends with the
// same issue, or nil when the graph is acyclic. The search visits issues in
// ascending order, so the result is deterministic.
func (g *Graph) Cycle() []int64 {
	const (
		white = iota // not visited
		grey         // on the current path
		black        // finished, no cycle through it
	)
	color := make(map[int64]int, len(g.nodes))
	var path []int64
	var visit func(n int64) []int64
	visit = func(n int64) []int64 {
		color[n] = grey
		path = append(path, n)
		for _, d := range g.deps[n] {
			switch color[d] {
			case grey:
				i := slices.Index(path, d)
				return append(slices.Clone(path[i:]), d)
			case white:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		color[n] = black
		return nil
	}
	for _, n := range g.nodes {
		if color[n] == white {
			if c := visit(n); c != nil {
				return c
			}
		}
	}
	return nil
}

// Order returns every issue in an order where each comes after all of its
// dependencies; among issues that are free to go next, the lowest number
// comes first. It returns a *CycleError when the graph has a cycle.
func (g *Graph) Order() ([]int64, error) {
	if c := g.Cycle(); c != nil {
		return nil, &CycleError{Path: c}
	}
	pending := make(map[int64]int, len(g.nodes)) // unmet dependency count
	dependants := map[int64][]int64{}
	for _, n := range g.nodes {
		pending[n] = len(g.deps[n])
		for _, d := range g.deps[n] {
			dependants[d] = append(dependants[d], n)
		}
	}
	free := &minHeap{}
	for _, n := range g.nodes {
		if pending[n] == 0 {
			heap.Push(free, n)
		}
	}
	out := make([]int64, 0, len(g.nodes))
	for free.Len() > 0 {
		n := heap.Pop(free).(int64)
		out = append(out, n)
		for _, m := range dependants[n] {
			pending[m]--
			if pending[m] == 0 {
				heap.Push(free, m)
			}
		}
	}
	return out, nil
}

// minHeap is a heap of issue numbers, smallest first.
type minHeap []int64

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Cycles returns every set of issues that depend on each other, directly
// or through others: the strongly connected components of more than one
// issue (self references are dropped when the graph is built). Each set is
// in ascending order, and the sets are ordered by their lowest issue. Nil
// when the graph is acyclic.
func (g *Graph) Cycles() [][]int64 {
	// Tarjan's algorithm. Recursion depth is bounded by the number of
	// issues in the graph, which the caller built from a listing.
	var (
		index   = map[int64]int{}
		low     = map[int64]int{}
		onStack = map[int64]bool{}
		stack   []int64
		next    int
		out     [][]int64
	)
	var connect func(n int64)
	connect = func(n int64) {
		index[n], low[n] = next, next
		next++
		stack = append(stack, n)
		onStack[n] = true
		for _, d := range g.deps[n] {
			if _, seen := index[d]; !seen {
				connect(d)
				low[n] = min(low[n], low[d])
			} else if onStack[d] {
				low[n] = min(low[n], index[d])
			}
		}
		if low[n] != index[n] {
			return
		}
		var scc []int64
		for {
			m := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[m] = false
			scc = append(scc, m)
			if m == n {
				break
			}
		}
		if len(scc) > 1 {
			slices.Sort(scc)
			out = append(out, scc)
		}
	}
	for _, n := range g.nodes {
		if _, seen := index[n]; !seen {
			connect(n)
		}
	}
	slices.SortFunc(out, func(a, b []int64) int { return cmp.Compare(a[0], b[0]) })
	return out
}

// CycleThrough returns a shortest dependency cycle through n as a path that
// starts and ends with n, each issue depending on the next: [3 5 3] means
// #3 depends on #5 and #5 on #3. Among cycles of equal length the one
// through lower-numbered issues wins. Nil when n is on no cycle.
func (g *Graph) CycleThrough(n int64) []int64 {
	// Breadth-first from n's dependencies, in ascending order, back to n.
	prev := map[int64]int64{}
	queue := []int64{}
	for _, d := range g.deps[n] {
		if _, seen := prev[d]; !seen {
			prev[d] = n
			queue = append(queue, d)
		}
	}
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		if m == n {
			var rev []int64
			for at := n; ; at = prev[at] {
				rev = append(rev, at)
				if at == n && len(rev) > 1 {
					break
				}
			}
			slices.Reverse(rev)
			return rev
		}
		for _, d := range g.deps[m] {
			if _, seen := prev[d]; !seen {
				prev[d] = m
				queue = append(queue, d)
			}
		}
	}
	return nil
}

// FormatPath renders a cycle path as "#3 → #5 → #3".
func FormatPath(path []int64) string {
	parts := make([]string, len(path))
	for i, n := range path {
		parts[i] = "#" + strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, " → ")
}

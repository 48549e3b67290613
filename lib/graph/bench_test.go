package graph_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/disinto/disinto/lib/graph"
)

// synthetic returns a graph of n nodes with about 3n blocks edges, random
// but fixed by the seed, dense enough for many nested cycles (which the
// reference's simple_cycles would enumerate exponentially).
func synthetic(n int) *graph.Graph {
	r := rand.New(rand.NewPCG(1, 2))
	g := graph.New()
	for i := range n {
		g.Add(graph.Node{ID: fmt.Sprintf("issue:%d", i), Type: graph.TypeIssue})
	}
	for i := range n {
		for range 3 {
			// Mostly forward edges, some back: components of many sizes.
			j := i + 1 + r.IntN(20)
			if r.IntN(4) == 0 {
				j = i - 1 - r.IntN(40)
			}
			if j >= 0 && j < n {
				g.Link(fmt.Sprintf("issue:%d", i), fmt.Sprintf("issue:%d", j), graph.RelBlocks)
			}
		}
	}
	return g
}

// BenchmarkSCC2000 is the cycle report of a 2,000-node graph (spec 40
// §5.5.4): the strongly connected components of its blocks subgraph and
// one chain each.
func BenchmarkSCC2000(b *testing.B) {
	g := synthetic(2000)
	b.ResetTimer()
	for b.Loop() {
		if cycles, total := g.Cycles(graph.DefaultMaxCycles); total == 0 || len(cycles) == 0 {
			b.Fatal("the synthetic graph has no cycle")
		}
	}
}

// TestSyntheticCycles checks the benchmark's graph is what it claims:
// its components partition the nodes on cycles, and every chain is a
// cycle of blocks edges inside its component.
func TestSyntheticCycles(t *testing.T) {
	g := synthetic(2000)
	cycles, total := g.Cycles(0)
	if total == 0 || len(cycles) != total {
		t.Fatalf("%d cycles, %d listed", total, len(cycles))
	}
	seen := map[string]bool{}
	for _, c := range cycles {
		in := map[string]bool{}
		for _, m := range c.Members {
			if seen[m] {
				t.Fatalf("%s in two components", m)
			}
			seen[m], in[m] = true, true
		}
		if len(c.Chain) < 3 || c.Chain[0] != c.Chain[len(c.Chain)-1] || c.Chain[0] != c.Members[0] {
			t.Fatalf("chain %v of %v", c.Chain, c.Members)
		}
		for i := 1; i < len(c.Chain); i++ {
			if !in[c.Chain[i]] || !g.Has(c.Chain[i-1], c.Chain[i], graph.RelBlocks) {
				t.Fatalf("chain %v: step %d is not a blocks edge inside the component", c.Chain, i)
			}
		}
	}
}

package deps_test

import (
	"slices"
	"testing"

	"github.com/disinto/disinto/lib/deps"
)

func TestCycles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edges map[int64][]int64
		want  [][]int64
	}{
		{"acyclic", map[int64][]int64{1: {2}, 2: {3}}, nil},
		{"self reference dropped", map[int64][]int64{1: {1}}, nil},
		{"pair", map[int64][]int64{3: {5}, 5: {3}}, [][]int64{{3, 5}}},
		{"two cycles and a tail", map[int64][]int64{
			1: {2}, 2: {1}, // one cycle
			4: {6}, 6: {7}, 7: {4}, // another
			9: {1}, // depends on a cycle, is not on it
		}, [][]int64{{1, 2}, {4, 6, 7}}},
		{"figure eight is one set", map[int64][]int64{1: {2, 3}, 2: {1}, 3: {1}}, [][]int64{{1, 2, 3}}},
		{"dependency outside the set", map[int64][]int64{1: {2, 8}, 2: {1}}, [][]int64{{1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := deps.NewGraph(tc.edges).Cycles()
			if !slices.EqualFunc(got, tc.want, slices.Equal[[]int64]) {
				t.Fatalf("Cycles() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCycleThrough(t *testing.T) {
	t.Parallel()
	g := deps.NewGraph(map[int64][]int64{
		1: {2, 5}, 2: {3}, 3: {1}, // long way round
		5:  {1}, // short way round
		8:  {1}, // not on a cycle
		10: {11}, 11: {10},
	})
	for _, tc := range []struct {
		n    int64
		want []int64
	}{
		{1, []int64{1, 5, 1}},
		{2, []int64{2, 3, 1, 2}},
		{5, []int64{5, 1, 5}},
		{8, nil},
		{10, []int64{10, 11, 10}},
		{99, nil},
	} {
		if got := g.CycleThrough(tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("CycleThrough(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	if got := deps.FormatPath([]int64{3, 5, 3}); got != "#3 → #5 → #3" {
		t.Errorf("FormatPath = %q", got)
	}
}

// Every issue of every set has a cycle through it that stays in the set.
func TestCyclesAgreeWithCycleThrough(t *testing.T) {
	t.Parallel()
	edges := map[int64][]int64{}
	// A deterministic pseudo-random graph of 40 issues.
	x := uint32(7)
	for n := int64(1); n <= 40; n++ {
		for range 2 {
			x = x*1664525 + 1013904223
			edges[n] = append(edges[n], int64(x%40)+1)
		}
	}
	g := deps.NewGraph(edges)
	on := map[int64]bool{}
	for _, set := range g.Cycles() {
		for _, n := range set {
			on[n] = true
			path := g.CycleThrough(n)
			if len(path) < 3 || path[0] != n || path[len(path)-1] != n {
				t.Fatalf("CycleThrough(%d) = %v", n, path)
			}
			for i, m := range path[:len(path)-1] {
				if !slices.Contains(set, m) || !slices.Contains(g.Deps(m), path[i+1]) {
					t.Fatalf("CycleThrough(%d) = %v leaves the set %v or follows no edge", n, path, set)
				}
			}
		}
	}
	for _, n := range g.Nodes() {
		if !on[n] && g.CycleThrough(n) != nil {
			t.Fatalf("#%d has a cycle but is in no set", n)
		}
	}
	if (g.Cycle() == nil) != (len(on) == 0) {
		t.Fatal("Cycle and Cycles disagree")
	}
}

package deps_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/disinto/disinto/lib/deps"
)

// states builds a StateFunc from closed and open sets; anything else is
// unknown.
func states(closed, open []int64) deps.StateFunc {
	return func(n int64) (bool, bool) {
		switch {
		case slices.Contains(closed, n):
			return true, true
		case slices.Contains(open, n):
			return false, true
		}
		return false, false
	}
}

func TestGraphReady(t *testing.T) {
	t.Parallel()
	g := deps.NewGraph(map[int64][]int64{
		1: nil,
		2: {1},
		3: {1, 2, 2, 3, -4}, // duplicate, self and negative refs are dropped
		4: {99},             // 99 is unknown to the forge
	})
	tests := []struct {
		name         string
		issue        int64
		closed, open []int64
		wantReady    bool
		wantBlocking []int64
	}{
		{"no deps", 1, nil, nil, true, nil},
		{"not in graph", 50, nil, nil, true, nil},
		{"dep closed", 2, []int64{1}, nil, true, nil},
		{"dep open", 2, nil, []int64{1}, false, []int64{1}},
		{"some closed", 3, []int64{1}, []int64{2}, false, []int64{2}},
		{"all closed", 3, []int64{1, 2}, nil, true, nil},
		{"unknown counts as open", 4, nil, nil, false, []int64{99}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fn := states(tt.closed, tt.open)
			if got := g.Ready(tt.issue, fn); got != tt.wantReady {
				t.Errorf("Ready(%d) = %v, want %v", tt.issue, got, tt.wantReady)
			}
			if got := g.Blocking(tt.issue, fn); !slices.Equal(got, tt.wantBlocking) {
				t.Errorf("Blocking(%d) = %v, want %v", tt.issue, got, tt.wantBlocking)
			}
		})
	}
	if got, want := g.Deps(3), []int64{1, 2}; !slices.Equal(got, want) {
		t.Errorf("Deps(3) = %v, want %v", got, want)
	}
	if got, want := g.Nodes(), []int64{1, 2, 3, 4, 99}; !slices.Equal(got, want) {
		t.Errorf("Nodes() = %v, want %v", got, want)
	}
}

func TestGraphSuggest(t *testing.T) {
	t.Parallel()
	// 10 waits for 5, 6 and 7. 5 waits for open 4; 6 is ready; 7 is ready but
	// its own dependencies are not known to the graph.
	g := deps.NewGraph(map[int64][]int64{
		10: {5, 6, 7},
		5:  {4},
		6:  {3},
	})
	tests := []struct {
		name         string
		closed, open []int64
		want         int64
		wantOK       bool
	}{
		{"first ready blocker", []int64{3}, []int64{4, 5, 6, 7}, 6, true},
		{"lower blocker becomes ready", []int64{3, 4}, []int64{5, 6, 7}, 5, true},
		{"blocker deps unknown to the graph", []int64{5, 6}, []int64{7}, 0, false},
		{"unknown state is never suggested", []int64{3}, []int64{5}, 0, false},
		{"nothing blocking", []int64{5, 6, 7}, nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := g.Suggest(10, states(tt.closed, tt.open))
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Suggest(10) = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestGraphOrderAndCycles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		issues    map[int64][]int64
		wantOrder []int64
		wantCycle []int64
	}{
		{"empty", nil, []int64{}, nil},
		{"chain", map[int64][]int64{3: {2}, 2: {1}}, []int64{1, 2, 3}, nil},
		{"lowest free first", map[int64][]int64{5: {9}, 2: nil, 7: {2}}, []int64{2, 7, 9, 5}, nil},
		{"diamond", map[int64][]int64{4: {2, 3}, 2: {1}, 3: {1}}, []int64{1, 2, 3, 4}, nil},
		{"two-cycle", map[int64][]int64{3: {5}, 5: {3}}, nil, []int64{3, 5, 3}},
		{"cycle behind a tail", map[int64][]int64{1: {2}, 2: {3}, 3: {4}, 4: {2}}, nil, []int64{2, 3, 4, 2}},
		{"self-loop is dropped", map[int64][]int64{1: {1}}, []int64{1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := deps.NewGraph(tt.issues)
			if got := g.Cycle(); !slices.Equal(got, tt.wantCycle) {
				t.Errorf("Cycle() = %v, want %v", got, tt.wantCycle)
			}
			order, err := g.Order()
			if tt.wantCycle != nil {
				var ce *deps.CycleError
				if !errors.As(err, &ce) || !errors.Is(err, deps.ErrCycle) {
					t.Fatalf("Order() error = %v, want a CycleError", err)
				}
				if !slices.Equal(ce.Path, tt.wantCycle) {
					t.Errorf("CycleError.Path = %v, want %v", ce.Path, tt.wantCycle)
				}
				return
			}
			if err != nil {
				t.Fatalf("Order() error = %v", err)
			}
			if !slices.Equal(order, tt.wantOrder) {
				t.Errorf("Order() = %v, want %v", order, tt.wantOrder)
			}
		})
	}
}

func TestCycleErrorMessage(t *testing.T) {
	t.Parallel()
	err := &deps.CycleError{Path: []int64{3, 5, 3}}
	if got, want := err.Error(), "dependency cycle: #3 -> #5 -> #3"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestFromBodies(t *testing.T) {
	t.Parallel()
	g := deps.FromBodies(map[int64]string{
		1: "Depends on #1 and #2.",
		2: "## Dependencies\n- #3",
	})
	if got := g.Deps(1); !slices.Equal(got, []int64{2}) {
		t.Errorf("Deps(1) = %v, want [2]", got)
	}
	order, err := g.Order()
	if err != nil || !slices.Equal(order, []int64{3, 2, 1}) {
		t.Errorf("Order() = %v, %v; want [3 2 1]", order, err)
	}
}

package shard

import (
	"fmt"
	"strings"
	"testing"
)

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("org%d/project-%d", i%7, i)
	}
	return out
}

func TestSingleReplicaOwnsEverything(t *testing.T) {
	for _, s := range []Shard{{}, {Slot: 1, Replicas: 1}} {
		if got := s.Owned(names(50)); len(got) != 50 {
			t.Errorf("%v owns %d of 50 projects", s, len(got))
		}
	}
}

func TestEveryProjectHasExactlyOneOwner(t *testing.T) {
	ps := names(300)
	for n := 1; n <= 6; n++ {
		count := map[string]int{}
		for slot := 1; slot <= n; slot++ {
			for _, p := range (Shard{Slot: slot, Replicas: n}).Owned(ps) {
				count[p]++
			}
		}
		for _, p := range ps {
			if count[p] != 1 {
				t.Fatalf("N=%d: %s has %d owners", n, p, count[p])
			}
		}
	}
}

// Growing the count moves projects only to the new replica; shrinking it
// moves only the projects of the replica that went away.
func TestChangingTheCountMovesOnlyWhatMust(t *testing.T) {
	for _, p := range names(500) {
		for n := 1; n < 8; n++ {
			before, after := Owner(p, n), Owner(p, n+1)
			if before != after && after != n+1 {
				t.Fatalf("%s moved from slot %d to %d going %d → %d", p, before, after, n, n+1)
			}
		}
	}
}

func TestOwnerIsStable(t *testing.T) {
	// Replicas of different builds must agree: the hash is part of the
	// contract, so a change here is a change of every deployment's split.
	got := []int{Owner("acme/web", 3), Owner("acme/api", 3), Owner("beta/site", 3), Owner("acme/web", 10)}
	again := []int{Owner("acme/web", 3), Owner("acme/api", 3), Owner("beta/site", 3), Owner("acme/web", 10)}
	if fmt.Sprint(got) != fmt.Sprint(again) {
		t.Fatalf("owners differ between calls: %v %v", got, again)
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		slot, n string
		want    Shard
	}{
		{"", "", Shard{}},
		{"", "1", Shard{Slot: 1, Replicas: 1}},
		{"1", "3", Shard{Slot: 1, Replicas: 3}},
		{"3", "3", Shard{Slot: 3, Replicas: 3}},
		{" 2 ", "3", Shard{Slot: 2, Replicas: 3}},
		{"disinto-agents-0", "3", Shard{Slot: 1, Replicas: 3}},
		{"disinto-agents-2", "3", Shard{Slot: 3, Replicas: 3}},
	} {
		got, err := Parse(c.slot, c.n)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q, %q) = %v, %v; want %v", c.slot, c.n, got, err, c.want)
		}
	}
	for _, c := range []struct{ slot, n, names string }{
		{"1", "", EnvReplicas},
		{"", "3", EnvSlot},
		{"0", "3", EnvSlot},
		{"4", "3", EnvSlot},
		{"-1", "3", EnvSlot},
		{"1", "0", EnvReplicas},
		{"1", "three", EnvReplicas},
		{"agents", "3", EnvSlot},
		{"agents-3", "3", EnvSlot},
		{"agents-x", "3", EnvSlot},
		{"-2", "3", EnvSlot},
	} {
		_, err := Parse(c.slot, c.n)
		if err == nil {
			t.Errorf("Parse(%q, %q) accepted", c.slot, c.n)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, c.names) || strings.Contains(msg, "\n") {
			t.Errorf("Parse(%q, %q): %q should be one line naming %s", c.slot, c.n, msg, c.names)
		}
	}
}

// BenchmarkSpread splits 1,000 projects over 10 replicas and reports the
// balance (the largest share over the mean; the target is at most 1.25)
// and the fraction of projects that move when an 11th replica joins (the
// minimum is 1/11 ≈ 0.091).
func BenchmarkSpread(b *testing.B) {
	ps := names(1000)
	var balance, moved float64
	for b.Loop() {
		per := make([]int, 11)
		owner := make([]int, len(ps))
		for i, p := range ps {
			owner[i] = Owner(p, 10)
			per[owner[i]]++
		}
		most := 0
		for _, c := range per {
			most = max(most, c)
		}
		balance = float64(most) / (float64(len(ps)) / 10)
		m := 0
		for i, p := range ps {
			if Owner(p, 11) != owner[i] {
				m++
			}
		}
		moved = float64(m) / float64(len(ps))
	}
	b.ReportMetric(balance, "max/mean")
	b.ReportMetric(moved, "moved/10→11")
}

// TestSpread holds the benchmark's figures to their targets.
func TestSpread(t *testing.T) {
	ps := names(1000)
	per := map[int]int{}
	moved := 0
	for _, p := range ps {
		o := Owner(p, 10)
		per[o]++
		if Owner(p, 11) != o {
			moved++
		}
	}
	most := 0
	for _, c := range per {
		most = max(most, c)
	}
	if balance := float64(most) / 100; balance > 1.25 {
		t.Errorf("balance over 10 replicas = %.2f, want ≤ 1.25 (%v)", balance, per)
	}
	if f := float64(moved) / 1000; f < 0.06 || f > 0.13 {
		t.Errorf("going 10 → 11 moved %.3f of the projects, want ≈ 1/11", f)
	}
}

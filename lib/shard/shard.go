// Package shard splits the projects of one configuration over the
// replicas of an agent service. The engine that runs the replicas (Docker
// Swarm, a Kubernetes StatefulSet) gives each one its slot and the
// replica count; a project belongs to the replica that rendezvous hashing
// (highest random weight) assigns it, so that changing the count moves
// only the projects that must move: going from N to N+1 replicas moves
// about 1/(N+1) of them, all to the new replica, and going from N+1 back
// to N moves only the projects of the replica that went away.
package shard

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// The environment variables a replica learns its place from.
const (
	// EnvSlot is the replica's slot: 1..N, as Swarm's {{.Task.Slot}}
	// gives it, or the name of a StatefulSet pod ("disinto-agents-0"),
	// whose 0-based ordinal is slot ordinal+1.
	EnvSlot = "DISINTO_REPLICA_SLOT"
	// EnvReplicas is the number of replicas N.
	EnvReplicas = "DISINTO_REPLICAS"
)

// Shard is one replica's place among the replicas of the service: its
// 1-based Slot of Replicas. The zero value is the single replica that
// owns every project.
type Shard struct {
	Slot     int // 1..Replicas
	Replicas int
}

// Single reports whether s is the only replica.
func (s Shard) Single() bool { return s.Replicas <= 1 }

// String is "slot/replicas", "1/1" for a single replica.
func (s Shard) String() string {
	if s.Single() {
		return "1/1"
	}
	return fmt.Sprintf("%d/%d", s.Slot, s.Replicas)
}

// Owns reports whether project belongs to s.
func (s Shard) Owns(project string) bool {
	return s.Single() || Owner(project, s.Replicas) == s.Slot
}

// Owned returns the projects of names that belong to s, in their order.
func (s Shard) Owned(names []string) []string {
	var out []string
	for _, n := range names {
		if s.Owns(n) {
			out = append(out, n)
		}
	}
	return out
}

// Owner is the slot (1..replicas) of the replica project belongs to: the
// slot of highest weight for the project. replicas below 1 count as 1.
func Owner(project string, replicas int) int {
	best, bestW := 1, uint64(0)
	for slot := 1; slot <= max(replicas, 1); slot++ {
		if w := weight(project, slot); slot == 1 || w > bestW {
			best, bestW = slot, w
		}
	}
	return best
}

// weight is the random weight of (project, slot): FNV-1a of both, mixed
// by splitmix64's finaliser so that nearby inputs spread over the range.
func weight(project string, slot int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(project))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(strconv.Itoa(slot)))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Error is a bad value of EnvSlot or EnvReplicas: one line naming the
// variable.
type Error struct {
	Var string // EnvSlot or EnvReplicas
	Msg string // what is wrong with its value
}

func (e *Error) Error() string { return e.Var + ": " + e.Msg }

// Parse reads a replica's place from the values of EnvSlot and
// EnvReplicas. Both empty is the single replica. Otherwise replicas must
// be a positive integer and, unless it is 1, slot an integer from 1 to
// replicas or a StatefulSet pod name ending in -<ordinal> with ordinal
// below replicas. Errors are *Error.
func Parse(slot, replicas string) (Shard, error) {
	slot, replicas = strings.TrimSpace(slot), strings.TrimSpace(replicas)
	if slot == "" && replicas == "" {
		return Shard{}, nil
	}
	if replicas == "" {
		return Shard{}, &Error{EnvReplicas, fmt.Sprintf("not set, but %s is (%q): set both, or neither for a single replica", EnvSlot, slot)}
	}
	n, err := strconv.Atoi(replicas)
	if err != nil || n < 1 || n > 1<<16 {
		return Shard{}, &Error{EnvReplicas, fmt.Sprintf("%q is not a number of replicas from 1 to %d", replicas, 1<<16)}
	}
	if slot == "" {
		if n == 1 {
			return Shard{Slot: 1, Replicas: 1}, nil
		}
		return Shard{}, &Error{EnvSlot, fmt.Sprintf("not set, but %s is %d: each replica needs its slot, 1 to %d (Swarm: {{.Task.Slot}})", EnvReplicas, n, n)}
	}
	if i, err := strconv.Atoi(slot); err == nil {
		if i < 1 || i > n {
			return Shard{}, &Error{EnvSlot, fmt.Sprintf("%q is not a slot from 1 to %d (%s); slots count from 1, as Swarm's {{.Task.Slot}}", slot, n, EnvReplicas)}
		}
		return Shard{Slot: i, Replicas: n}, nil
	}
	k := strings.LastIndexByte(slot, '-')
	ord, err := strconv.Atoi(slot[k+1:])
	if k < 1 || err != nil || ord < 0 || strings.HasPrefix(slot[k+1:], "+") {
		return Shard{}, &Error{EnvSlot, fmt.Sprintf("%q is neither a slot from 1 to %d nor a StatefulSet pod name <name>-<ordinal>", slot, n)}
	}
	if ord >= n {
		return Shard{}, &Error{EnvSlot, fmt.Sprintf("%q: pod ordinal %d is not below %s=%d", slot, ord, EnvReplicas, n)}
	}
	return Shard{Slot: ord + 1, Replicas: n}, nil
}

//go:build !race

package faults

// raceEnabled reports that the suite runs with -race.
const raceEnabled = false

//go:build race

package faults

// raceEnabled reports that the suite runs with -race; the disinto binary
// it runs is then built with -race too.
const raceEnabled = true

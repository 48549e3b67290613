//go:build !race

package e2e

// raceEnabled reports that the tests were built with -race; the system
// test then builds the disinto binary with -race too.
const raceEnabled = false

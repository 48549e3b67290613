//go:build !race

package rig

// raceEnabled reports that this test binary was built with -race.
const raceEnabled = false

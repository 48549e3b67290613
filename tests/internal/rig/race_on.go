//go:build race

package rig

// raceEnabled reports that this test binary was built with -race: the
// disinto binary it runs is then built with -race too.
const raceEnabled = true

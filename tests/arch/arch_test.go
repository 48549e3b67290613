package arch

import (
	"strings"
	"testing"
)

const module = "github.com/disinto/disinto"

// TestLayering fails the test command when any import in the module breaks
// the layering of DESIGN.md.
func TestLayering(t *testing.T) {
	vs, err := Check("../..", module)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// TestFixtureViolations proves the check catches each kind of violation in
// a fixture tree written to break every rule.
func TestFixtureViolations(t *testing.T) {
	vs, err := Check("testdata/bad", module)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.String())
	}
	want := []string{
		"agents/dev/dev.go imports agents/review: agents never import each other; move shared code to lib",
		"agents/dev/dev.go imports lib/forge/forgetest: test harnesses are imported only from tests",
		"agents/review/review.go imports cmd/disinto: agents never import cmd",
		"cmd/disinto/main_test.go imports tests/internal/rig: only tests import tests",
		"lib/config/config.go imports lib/low: lib/config imports no other lib package",
		"lib/daemon/daemon.go imports agents/dev: lib/daemon imports no agent: roles reach it through their constructors (daemon.Registry)",
		"lib/low/low.go imports agents/dev: lib imports only lib",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDataDirPaths fails the test command when a path under the data dir
// is spelled outside lib/datadir.
func TestDataDirPaths(t *testing.T) {
	vs, err := DataDirJoins("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// TestFixtureDataDirJoins proves the rule catches a data-dir join planted
// in an agent, through a field and through append, and lets tests and
// lib/datadir itself be.
func TestFixtureDataDirJoins(t *testing.T) {
	vs, err := DataDirJoins("testdata/bad")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.String())
	}
	want := []string{
		"agents/dev/paths.go:12: filepath.Join(append([]string{dataDir, kind, project}, parts...)...): paths under the data dir are named in lib/datadir",
		"agents/dev/paths.go:8: filepath.Join(o.DataDir, \"state\", project): paths under the data dir are named in lib/datadir",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCompositionRootSize fails the test command when cmd/disinto grows
// past MaxRootFiles non-test files.
func TestCompositionRootSize(t *testing.T) {
	files, err := RootFiles("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) > MaxRootFiles {
		t.Errorf("%s holds %d non-test Go files, at most %d: move runtime to lib/daemon, a role to its package\n%s",
			compositionRoot, len(files), MaxRootFiles, strings.Join(files, " "))
	}
}

// TestFixtureRootSize proves the count sees the fixture's command files
// and not its tests.
func TestFixtureRootSize(t *testing.T) {
	files, err := RootFiles("testdata/bad")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(files, " ") != "main.go" {
		t.Errorf("fixture root files %v, want [main.go]", files)
	}
}

// TestMarkerReadsCheckTheAuthor fails the test command when a marker is
// read out of a forge item's body without checking who wrote it.
func TestMarkerReadsCheckTheAuthor(t *testing.T) {
	vs, err := UncheckedMarkerReads("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// TestFixtureMarkerReads proves the rule catches each reader applied to
// a body in an agent, and lets the reading of a plain string, MarkerBy
// and the defining package be.
func TestFixtureMarkerReads(t *testing.T) {
	vs, err := UncheckedMarkerReads("testdata/bad")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.String())
	}
	want := []string{
		"agents/review/markers.go:9: forge.FindMarker(c.Body, \"claim\"): a marker counts only when the factory's bot wrote it; use MarkerBy of the comment, issue or pull request",
		"agents/review/markers.go:10: forge.FindRefMarkers(p.Body, forge.RefDisintoIssue): a marker counts only when the factory's bot wrote it; use RefMarkersBy of the comment or pull request",
		"agents/review/markers.go:11: verdict.ParseMarker(c.Body): a marker counts only when the factory's bot wrote it; use verdict.CommentMarker",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

package main

import "runtime/debug"

// buildCommit is the commit the binary was built from, as go build
// stamps it from git, or "" when it carries none.
func buildCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}

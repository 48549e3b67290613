// Command fakeclaude is a fault-injecting stand-in for the claude CLI,
// driven by the CLAUDETEST_FAKE* environment variables (see claudetest).
package main

import (
	"os"

	"github.com/disinto/disinto/lib/claude/claudetest"
)

func main() {
	os.Exit(claudetest.FakeMain())
}

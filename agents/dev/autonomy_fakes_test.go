package dev

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// fakeFiles is what fakeGit knows of the files commits change and of the
// held refs it pushed.
type fakeFiles struct {
	// changed maps a commit to the dir it was made in and its files.
	changed map[string]fakeCommit
	// held maps a branch to the commit held for it.
	held map[string]string
}

type fakeCommit struct {
	dir   string
	files []string
}

// commitFiles simulates a commit in dir that changes files.
func (g *fakeGit) commitFiles(dir string, files ...string) string {
	sha := g.commit(dir)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.files.changed == nil {
		g.files.changed = map[string]fakeCommit{}
	}
	g.files.changed[sha] = fakeCommit{dir: dir, files: files}
	return sha
}

// heldOf returns the commit held for branch, "" when none.
func (g *fakeGit) heldOf(branch string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.files.held[branch]
}

func seqOf(sha string) int {
	n, _ := strconv.Atoi(strings.TrimLeft(sha, "0"))
	return n
}

// Changes implements gitOps: a diff of every file the commits of head's
// checkout after base (from the first with base "") up to head changed.
func (g *fakeGit) Changes(_ context.Context, base, head string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	hc, ok := g.files.changed[head]
	var b strings.Builder
	for sha, c := range g.files.changed {
		if !ok || c.dir != hc.dir || seqOf(sha) > seqOf(head) || (base != "" && seqOf(sha) <= seqOf(base)) {
			continue
		}
		for _, f := range c.files {
			fmt.Fprintf(&b, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-old\n+new %s\n", f, f, f, f, sha)
		}
	}
	return b.String(), nil
}

// Hold implements gitOps.
func (g *fakeGit) Hold(_ context.Context, sha, branch string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.files.held == nil {
		g.files.held = map[string]string{}
	}
	g.files.held[branch] = sha
	return nil
}

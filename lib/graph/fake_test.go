package graph_test

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/disinto/disinto/lib/forge"
)

// memFiles is an in-memory repository: path → content.
type memFiles map[string]string

// Read implements graph.Files.
func (m memFiles) Read(p string) ([]byte, error) {
	s, ok := m[p]
	if !ok {
		return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}
	return []byte(s), nil
}

// List implements graph.Files.
func (m memFiles) List(dir string) ([]string, error) {
	var out []string
	for p := range m {
		if path.Dir(p) == strings.TrimSuffix(dir, "/") {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// fakeForge is a tracker in memory; err makes every call fail.
type fakeForge struct {
	issues []forge.Issue
	labels []string
	err    error
	// queries records the issue queries.
	queries []forge.IssueQuery
}

// ListIssues implements graph.Forge.
func (f *fakeForge) ListIssues(_ context.Context, q forge.IssueQuery) ([]forge.Issue, error) {
	f.queries = append(f.queries, q)
	if f.err != nil {
		return nil, f.err
	}
	var out []forge.Issue
	for _, is := range f.issues {
		if q.State == forge.StateAll || is.State == q.State || (q.State == "" && is.State == forge.StateOpen) {
			out = append(out, is)
		}
	}
	return out, nil
}

// ListLabels implements graph.Forge.
func (f *fakeForge) ListLabels(context.Context) ([]forge.Label, error) {
	if f.err != nil {
		return nil, f.err
	}
	var out []forge.Label
	for _, l := range f.labels {
		out = append(out, forge.Label{Name: forge.LabelName(l)})
	}
	return out, nil
}

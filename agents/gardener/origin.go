package gardener

import (
	"context"
	"fmt"
	"sort"

	"github.com/disinto/disinto/lib/forge"
	"github.com/disinto/disinto/lib/provenance"
)

// What the gardener writes is derived from the issues its session was
// shown, any of which may steer it: an enrichment, a bug report's
// sections, a dust bundle and the pull request carrying the manifest take
// the least trusted origin of the issue they are about and of every issue
// of the session (lib/provenance), in an origin marker. An outsider's
// issue among them makes the gardener's text an outsider's, which the
// dev agent works only once a maintainer applies backlog; the gardener's
// own backlog label is no maintainer's word.

// originsOf judges the origin of each issue shown to the session, and the
// session's taint, the least trusted of them.
func (a *Agent) originsOf(ctx context.Context, shown []forge.Issue, g *groomed) error {
	judge := provenance.New(provenance.Options{Forge: a.o.Forge, Now: a.now})
	g.origins = make(map[int64]provenance.Origin, len(shown))
	for _, i := range shown {
		o, err := judge.Issue(ctx, i)
		if err != nil {
			return fmt.Errorf("origin of #%d: %w", i.Number, err)
		}
		g.origins[i.Number] = o
		g.taint = provenance.Least(g.taint, o)
	}
	return nil
}

// origin is the origin of what the session wrote about issue n: the least
// trusted of n's and the session's. An issue not shown to the session
// counts as an outsider's.
func (g *groomed) origin(n int64) provenance.Origin {
	o, ok := g.origins[n]
	if !ok {
		o = provenance.Outsider
	}
	return provenance.Least(o, g.taint)
}

// marker is the origin marker of what the session wrote about issue n (n
// = 0: about none, the pull request), naming n and the outsiders' issues
// that were shown with it.
func (g *groomed) marker(n int64) string {
	o := g.taint
	var from []string
	if n > 0 {
		o = g.origin(n)
		from = append(from, fmt.Sprintf("issue-%d", n))
	}
	var outs []int64
	for m, mo := range g.origins {
		if mo != provenance.Maintainer && m != n {
			outs = append(outs, m)
		}
	}
	sort.Slice(outs, func(i, j int) bool { return outs[i] < outs[j] })
	for _, m := range outs {
		from = append(from, fmt.Sprintf("issue-%d", m))
	}
	return provenance.Marker(o, from...)
}

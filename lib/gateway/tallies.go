package gateway

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/disinto/disinto/lib/atomicfile"
)

// A gateway shared by several daemons (`disinto gateway`) has no ledger
// to count a day from after a restart; it keeps its day tallies in a
// state file instead, written after every metered request.

// loadTallies reads the tallies kept in path, if any.
func (g *Gateway) loadTallies(path string) error {
	var days map[string]*tally
	err := atomicfile.ReadJSON(path, &days)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("gateway: day tallies: %w", err)
	}
	for k, t := range days {
		if t != nil {
			g.days[k] = t
		}
	}
	return nil
}

// saveTallies writes the day tallies to the state file, when there is
// one. Snapshots are taken and written in order, so a later write never
// holds less than an earlier one.
func (g *Gateway) saveTallies() {
	if g.stateFile == "" {
		return
	}
	g.saveMu.Lock()
	defer g.saveMu.Unlock()
	g.mu.Lock()
	days := make(map[string]tally, len(g.days))
	for k, t := range g.days {
		days[k] = *t
	}
	g.mu.Unlock()
	if err := atomicfile.WriteJSON(g.stateFile, days, 0o600); err != nil {
		g.log.Error().Err(err).Str("file", g.stateFile).Msg("model gateway: could not keep the day tallies")
	}
}

package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/config"
)

// Enablement is the one authoritative record of paused agents: a small JSON
// file under the data dir (<data>/agents.json) that survives restarts. The
// daemon reads it at every tick, so `disinto agent pause` takes effect on
// the next tick without talking to the daemon. A nil *Enablement pauses
// nothing.
type Enablement struct {
	path string
	now  func() time.Time
}

// Pause is one paused role; an empty Project pauses the role everywhere.
type Pause struct {
	Role    config.Role `json:"role"`
	Project string      `json:"project,omitempty"`
	Since   time.Time   `json:"since"`
}

type enablementFile struct {
	Paused []Pause `json:"paused"`
}

// NewEnablement returns the enablement stored at path.
func NewEnablement(path string, now func() time.Time) *Enablement {
	if now == nil {
		now = time.Now
	}
	return &Enablement{path: path, now: now}
}

// List returns the pauses, sorted by role then project.
func (e *Enablement) List() ([]Pause, error) {
	if e == nil {
		return nil, nil
	}
	data, err := os.ReadFile(e.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read agent enablement: %w", err)
	}
	var f enablementFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", e.path, err)
	}
	sort.Slice(f.Paused, func(i, j int) bool {
		if f.Paused[i].Role != f.Paused[j].Role {
			return f.Paused[i].Role < f.Paused[j].Role
		}
		return f.Paused[i].Project < f.Paused[j].Project
	})
	return f.Paused, nil
}

// Paused reports whether role is paused for project (or everywhere).
func (e *Enablement) Paused(project string, role config.Role) (bool, error) {
	ps, err := e.List()
	if err != nil {
		return false, err
	}
	for _, p := range ps {
		if p.Role == role && (p.Project == "" || p.Project == project) {
			return true, nil
		}
	}
	return false, nil
}

// Pause pauses role for project, or everywhere when project is empty.
// Pausing twice is not an error.
func (e *Enablement) Pause(role config.Role, project string) error {
	ps, err := e.List()
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.Role == role && p.Project == project {
			return nil
		}
	}
	return e.write(append(ps, Pause{Role: role, Project: project, Since: e.now().UTC()}))
}

// ErrPausedEverywhere is returned when resuming one project of a role that
// is paused for all projects.
var ErrPausedEverywhere = errors.New("paused for all projects; resume without a project")

// Resume lifts the pause of role for project; with an empty project it
// lifts every pause of role.
func (e *Enablement) Resume(role config.Role, project string) error {
	ps, err := e.List()
	if err != nil {
		return err
	}
	kept := ps[:0]
	for _, p := range ps {
		switch {
		case p.Role != role:
			kept = append(kept, p)
		case project == "":
		case p.Project == project:
		case p.Project == "":
			return fmt.Errorf("%s: %w", role, ErrPausedEverywhere)
		default:
			kept = append(kept, p)
		}
	}
	return e.write(kept)
}

func (e *Enablement) write(ps []Pause) error {
	data, err := json.MarshalIndent(enablementFile{Paused: ps}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode agent enablement: %w", err)
	}
	if err := atomicfile.Write(e.path, append(data, '\n'), 0o640); err != nil {
		return fmt.Errorf("write agent enablement: %w", err)
	}
	return nil
}

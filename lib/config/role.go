package config

import (
	"fmt"
	"strings"
)

// Role names an agent. The set is the role table's: every role the daemon
// knows is one row of it (RoleSpecs).
type Role string

// The roles of the table (roletable.go). Vault and filer hold forge
// identities but are companions, not scheduled by AGENT_ROLES.
const (
	RoleDev        Role = "dev"
	RoleReview     Role = "review"
	RoleGardener   Role = "gardener"
	RolePlanner    Role = "planner"
	RolePredictor  Role = "predictor"
	RoleArchitect  Role = "architect"
	RoleSupervisor Role = "supervisor"
	RoleVault      Role = "vault"
	RoleFiler      Role = "filer"
	// RoleReproduce reproduces, triages and verifies bug reports in a
	// browser sidecar (agents/reproduce).
	RoleReproduce Role = "reproduce"
)

// Validate reports whether r is a role of the table.
func (r Role) Validate() error {
	if _, ok := SpecOf(r); ok {
		return nil
	}
	return fmt.Errorf("unknown role %q (known: %s)", string(r), joinRoles(AllRoles()))
}

// OptIn reports whether r runs only for projects that enable it
// (`[roles.<role>] enabled = true`), as the bug-report sidecars, which
// need the Docker engine and an image of their own.
func (r Role) OptIn() bool {
	s, _ := SpecOf(r)
	return s.OptIn
}

// Scheduled reports whether the daemon runs r on an interval of its own
// configuration (AGENT_ROLES, [roles.<role>]).
func (r Role) Scheduled() bool {
	s, _ := SpecOf(r)
	return s.Scheduled
}

// String returns the role name.
func (r Role) String() string { return string(r) }

// ParseRoles parses an AGENT_ROLES value. Commas and white space both
// separate roles (the reference's generated services wrote space-separated
// lists that its loop then failed to match). Unknown roles are an error.
// An empty value selects every scheduled role.
func ParseRoles(s string) ([]Role, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if len(fields) == 0 {
		return ScheduledRoles(), nil
	}
	seen := map[Role]bool{}
	var out []Role
	for _, f := range fields {
		r := Role(strings.ToLower(strings.TrimSpace(f)))
		if err := r.Validate(); err != nil {
			return nil, err
		}
		if !r.Scheduled() {
			return nil, fmt.Errorf("role %q is not a scheduled agent (scheduled: %s)", string(r), joinRoles(ScheduledRoles()))
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out, nil
}

func joinRoles(rs []Role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

package config

import (
	"fmt"
	"strings"
)

// Role names an agent. The set is closed: every role the daemon knows is
// listed here once.
type Role string

// The roles. Vault and filer hold forge identities but are not scheduled
// agents of their own.
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

// ScheduledRoles are the roles the daemon runs on an interval, in the order
// the reference starts them (review first, dev after it).
var ScheduledRoles = []Role{RoleReview, RoleDev, RoleGardener, RoleArchitect, RolePlanner, RolePredictor, RoleSupervisor, RoleReproduce}

// AllRoles is every role that has a forge identity.
var AllRoles = append(append([]Role{}, ScheduledRoles...), RoleVault, RoleFiler)

// Validate reports whether r is a known role.
func (r Role) Validate() error {
	for _, k := range AllRoles {
		if r == k {
			return nil
		}
	}
	return fmt.Errorf("unknown role %q (known: %s)", string(r), joinRoles(AllRoles))
}

// OptIn reports whether r runs only for projects that enable it
// (`[roles.<role>] enabled = true`): the bug-report sidecars need the
// Docker engine and an image of their own.
func (r Role) OptIn() bool { return r == RoleReproduce }

// Scheduled reports whether the daemon runs r on an interval.
func (r Role) Scheduled() bool {
	for _, k := range ScheduledRoles {
		if r == k {
			return true
		}
	}
	return false
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
		return append([]Role(nil), ScheduledRoles...), nil
	}
	seen := map[Role]bool{}
	var out []Role
	for _, f := range fields {
		r := Role(strings.ToLower(strings.TrimSpace(f)))
		if err := r.Validate(); err != nil {
			return nil, err
		}
		if !r.Scheduled() {
			return nil, fmt.Errorf("role %q is not a scheduled agent (scheduled: %s)", string(r), joinRoles(ScheduledRoles))
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

package config

import (
	"fmt"
	"strconv"
	"strings"
)

// LocalRoles are the roles an [agents.<name>] section may list: the rows
// of the role table that run in lanes (Lanes).
func LocalRoles() []Role { return rolesWhere(func(s RoleSpec) bool { return s.Lanes }) }

// LocalRoleSupported reports whether a local-model agent can play r.
func LocalRoleSupported(r Role) bool {
	s, _ := SpecOf(r)
	return s.Lanes
}

// HasRole reports whether the local agent plays r.
func (a LocalAgent) HasRole(r Role) bool {
	for _, x := range a.Roles {
		if x == r {
			return true
		}
	}
	return false
}

// LocalDevAgents returns the project's local-model agents that play dev,
// sorted by name, which this daemon runs beside the default dev agent.
// A daemon whose own dev agent acts as a local identity (DISINTO_DEV_BOT,
// the compose llama service) runs none: that identity is the daemon's dev
// agent, and another daemon serves the rest.
func (c *Config) LocalDevAgents(p *Project) []LocalAgent {
	if strings.TrimSpace(c.Env.Get("DISINTO_DEV_BOT")) != "" {
		return nil
	}
	var out []LocalAgent
	for _, name := range sortedKeys(p.Agents) {
		if a := p.Agents[name]; a.HasRole(RoleDev) {
			out = append(out, a)
		}
	}
	return out
}

// unsupportedKeys are keys of the reference project file this release
// does not implement: rejected with a message that says so, not silently
// ignored. (The supervisor's keys, ci.stale_minutes, [services] and
// [monitoring], are read in supervisor.go.)
var unsupportedKeys = map[string]string{
	"agents.schedule": "is not supported (the reference parsed nothing of it); set intervals in [roles.<role>] or [agents.<name>] poll_interval",
}

// unsupported returns the message for key k when k or a table above it is
// an unsupported key, and that key.
func unsupported(k string) (key, msg string, ok bool) {
	for u, m := range unsupportedKeys {
		if k == u || strings.HasPrefix(k, u+".") {
			return u, m, true
		}
	}
	return "", "", false
}

// validMaintainers checks the maintainers list: forge logins, once each.
func validMaintainers(in []string, bad func(key, format string, args ...any)) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range in {
		m = strings.TrimPrefix(strings.TrimSpace(m), "@")
		switch {
		case !nameRe.MatchString(m):
			bad("maintainers", "%q is not a forge login", m)
		case seen[strings.ToLower(m)]:
		default:
			seen[strings.ToLower(m)] = true
			out = append(out, m)
		}
	}
	return out
}

// checkAutoCompact validates CLAUDE_AUTOCOMPACT_PCT_OVERRIDE of the
// environment, which the default backend passes to its sessions.
func checkAutoCompact(env Env) Problems {
	v := env.Get(AutoCompactEnv)
	if v == "" {
		return nil
	}
	if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 100 {
		return Problems{{File: "environment", Key: AutoCompactEnv, Msg: fmt.Sprintf("%q is not an integer from 1 to 100", v)}}
	}
	return nil
}

// withLocalAgents returns names plus the forge login of every local-model
// agent of the projects: their claims and comments are a bot's.
func withLocalAgents(names []string, projects []*Project, env Env) []string {
	out := append([]string(nil), names...)
	seen := map[string]bool{}
	for _, n := range out {
		seen[strings.ToLower(n)] = true
	}
	for _, p := range projects {
		for _, name := range sortedKeys(p.Agents) {
			if u := localLogin(env, p.Agents[name]); !seen[strings.ToLower(u)] {
				seen[strings.ToLower(u)] = true
				out = append(out, u)
			}
		}
	}
	return out
}

// localLogin is the login of local-model agent a: its forge_user, else
// FORGE_BOT_USER_<NAME> (which disinto init --local-bot records), else
// "<name>-bot".
func localLogin(env Env, a LocalAgent) string {
	if a.ForgeUser != "" {
		return a.ForgeUser
	}
	if u := strings.TrimSpace(env.Get("FORGE_BOT_USER_" + varName(a.Name))); u != "" {
		return u
	}
	return a.Name + "-bot"
}

// varName is name as it appears in variable names (FORGE_TOKEN_<NAME>).
func varName(name string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name))
}

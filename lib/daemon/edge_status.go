package daemon

import (
	"sort"
	"strings"

	"github.com/disinto/disinto/lib/chat"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/edge"
)

// EdgeStatus is the edge as /status reports it: its public URL, its
// routes and who may use the chat. Nil when no edge is configured.
type EdgeStatus struct {
	URL       string            `json:"url"`
	Routes    []EdgeRouteStatus `json:"routes"`
	ChatUsers []string          `json:"chat_users"`
	// Warning says which routes are disabled and why; empty when the
	// edge serves them all.
	Warning string `json:"warning,omitempty"`
}

// EdgeRouteStatus is one route of the edge.
type EdgeRouteStatus struct {
	Name     string   `json:"name"`
	Paths    []string `json:"paths,omitempty"`
	Upstream string   `json:"upstream"`
	// Login says the route is behind the chat's forge login.
	Login bool `json:"login"`
	// Disabled, when set, is what the disabled route answers (a 503)
	// instead of proxying.
	Disabled string `json:"disabled,omitempty"`
}

// EdgeStatusOf reads the edge from env: its URL (DISINTO_EDGE_URL), the
// routes of its settings, disabled as the edge disables them without its
// secret (DISINTO_EDGE_SECRET, or DISINTO_EDGE_SECRET_SET) or the status
// token, and the chat's allowlist with the forge admin.
func EdgeStatusOf(env config.Env) *EdgeStatus {
	url := env.Get(edge.URLEnv)
	if url == "" {
		return nil
	}
	c := edgeConfigOf(env)
	st := &EdgeStatus{URL: url, ChatUsers: []string{}, Warning: c.Warning()}
	for _, r := range c.Routes() {
		st.Routes = append(st.Routes, EdgeRouteStatus{Name: r.Name, Paths: r.Paths, Upstream: r.Upstream,
			Login: r.Check != "" && r.Disabled == "", Disabled: r.Disabled})
	}
	seen := map[string]bool{}
	for _, u := range append(strings.Split(env.Get(chat.UsersEnv), ","), env.Get("FORGE_ADMIN_USER")) {
		if u = strings.TrimSpace(u); u != "" && !seen[strings.ToLower(u)] {
			seen[strings.ToLower(u)] = true
			st.ChatUsers = append(st.ChatUsers, u)
		}
	}
	sort.Strings(st.ChatUsers)
	return st
}

// edgeConfigOf is the edge's configuration as env gives it, its secrets
// known only as set or not.
func edgeConfigOf(env config.Env) edge.Config {
	return edge.Config{Forge: env.Get(edge.ForgeEnv), Status: env.Get(edge.StatusEnv), Chat: env.Get(edge.ChatEnv),
		NoSecret:      env.Get(edge.SecretEnv) == "" && env.Get(edge.SecretSetEnv) == "",
		NoStatusToken: env.Get(edge.StatusTokenEnv) == ""}
}

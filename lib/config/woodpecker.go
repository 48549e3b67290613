package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Environment variables of the Woodpecker server the daemon reads CI logs
// from (spec 00 §10.2).
const (
	// EnvWoodpeckerServer is the server's base URL as the daemon reaches
	// it, e.g. http://woodpecker:8000 inside the compose network.
	EnvWoodpeckerServer = "WOODPECKER_SERVER"
	// EnvWoodpeckerToken is a Woodpecker personal access token that may
	// read the projects' pipelines and logs.
	EnvWoodpeckerToken = "WOODPECKER_TOKEN"
)

// Woodpecker is the Woodpecker server of the projects whose ci.system is
// "woodpecker". Both fields are set whenever such a project exists; the
// repository id is per project (ci.woodpecker_repo_id).
type Woodpecker struct {
	// Server is the base URL, no trailing slash.
	Server string
	// Token is the API token, a secret.
	Token string
}

// woodpeckerFromEnv reads the Woodpecker server from env. A project whose
// CI is Woodpecker needs both variables; a server URL, when set, must be
// an absolute http(s) URL without credentials (the token goes in its own
// variable, never in a URL that errors and logs show).
func woodpeckerFromEnv(env Env, projects []*Project) (Woodpecker, Problems) {
	w := Woodpecker{Server: strings.TrimSuffix(strings.TrimSpace(env.Get(EnvWoodpeckerServer)), "/"),
		Token: strings.TrimSpace(env.Get(EnvWoodpeckerToken))}
	var ps Problems
	if w.Server != "" {
		u, err := url.Parse(w.Server)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			ps = append(ps, &Problem{File: "environment", Key: EnvWoodpeckerServer,
				Msg: fmt.Sprintf("%q is not an absolute http(s) URL", w.Server)})
		} else if u.User != nil {
			ps = append(ps, &Problem{File: "environment", Key: EnvWoodpeckerServer,
				Msg: "must not carry credentials; set " + EnvWoodpeckerToken})
		}
	}
	var user *Project
	for _, p := range projects {
		if p.CI.System == CIWoodpecker {
			user = p
			break
		}
	}
	if user == nil {
		return w, ps
	}
	for _, v := range []struct{ key, val string }{{EnvWoodpeckerServer, w.Server}, {EnvWoodpeckerToken, w.Token}} {
		if v.val == "" {
			ps = append(ps, &Problem{File: "environment", Key: v.key,
				Msg: fmt.Sprintf("is required: project %s (%s) has ci.system = %q", user.Name, user.File, CIWoodpecker)})
		}
	}
	return w, ps
}

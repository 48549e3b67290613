package config

import (
	"fmt"
	"net/url"
	"strings"
)

// ForgePublicURLEnv names the forge's address as people reach it, when it
// differs from the one the daemon uses (under compose the daemon reaches
// http://forgejo:3000, which no browser resolves).
const ForgePublicURLEnv = "FORGE_PUBLIC_URL"

// setPublicURLs sets each project's PublicURL: FORGE_PUBLIC_URL for the
// projects on the forge FORGE_URL names (every project when FORGE_URL is
// unset), the project's own forge URL otherwise or when none is set.
func setPublicURLs(projects []*Project, env Env) Problems {
	public := strings.TrimRight(env.Get(ForgePublicURLEnv), "/")
	var ps Problems
	if public != "" {
		if u, err := url.Parse(public); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			ps = append(ps, &Problem{File: "environment", Key: ForgePublicURLEnv,
				Msg: fmt.Sprintf("%q is not an http(s) URL without credentials (the forge as a browser reaches it, e.g. http://localhost:3000)", public)})
			public = ""
		}
	}
	internal := strings.TrimRight(env.Get("FORGE_URL"), "/")
	for _, p := range projects {
		p.PublicURL = p.ForgeURL
		if public != "" && (internal == "" || internal == p.ForgeURL) {
			p.PublicURL = public
		}
	}
	return ps
}

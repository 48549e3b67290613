package claude

import (
	"sort"
	"strings"
)

// noProxy are the destinations a session reaches without the egress
// proxy: this host's loopback, where the model gateway listens (and the
// session's own test servers).
const noProxy = "localhost,127.0.0.1,::1"

// proxyEnv are the variables that point a session's tools at the egress
// proxy: both spellings, as curl reads only the lowercase http_proxy and
// other tools only the uppercase.
var proxyEnv = []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}

// withEgressProxy replaces the proxy settings env inherited from the
// daemon with the egress proxy at url ("" leaves env as it is). env is
// sorted KEY=VALUE and stays so.
func withEgressProxy(env []string, url string) []string {
	if url == "" {
		return env
	}
	set := map[string]string{"NO_PROXY": noProxy, "no_proxy": noProxy}
	for _, k := range proxyEnv {
		set[k] = url
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, replaced := set[k]; !replaced {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

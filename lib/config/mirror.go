package config

import (
	"net/url"
	"strings"
)

// MirrorSecretName is the secret-store name of the credential the vault
// pushes mirror name with: MIRROR_<NAME>_TOKEN, the name upper-cased and
// every character other than a letter or digit made '_' ("github" →
// MIRROR_GITHUB_TOKEN). `disinto secrets set` stores it; no agent and no
// env file holds it.
func MirrorSecretName(name string) string {
	var b strings.Builder
	b.WriteString("MIRROR_")
	for _, r := range strings.ToUpper(name) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	b.WriteString("_TOKEN")
	return b.String()
}

// MirrorNeedsSecret reports whether pushing to the mirror at rawURL takes
// a token from the secret store: an http(s) URL does; a path, file:// or
// ssh URL does not (git's own transport authenticates those).
func MirrorNeedsSecret(rawURL string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https")
}

// MirrorURLHasCredential reports whether rawURL embeds a password or
// token (https://user:token@host/...), the way mirrors were configured
// before the vault pushed them.
func MirrorURLHasCredential(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return false
	}
	_, ok := u.User.Password()
	return ok
}

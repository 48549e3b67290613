package forgejocheck

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Allowed is one known difference: a finding's key, the Forgejo version
// it was judged against, and why the product may live with it.
type Allowed struct {
	Key, Version, Reason string
	Line                 int
}

// ParseAllowlist reads lines "key | version | reason"; blank lines and
// lines starting with # are comments.
func ParseAllowlist(r io.Reader) ([]Allowed, error) {
	var out []Allowed
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, " | ")
		if len(parts) != 3 || strings.TrimSpace(parts[2]) == "" {
			return nil, fmt.Errorf("allowlist line %d: want \"key | forgejo version | reason\"", n)
		}
		out = append(out, Allowed{
			Key: strings.TrimSpace(parts[0]), Version: strings.TrimSpace(parts[1]),
			Reason: strings.TrimSpace(parts[2]), Line: n,
		})
	}
	return out, sc.Err()
}

// Filter returns the findings no entry allows, and the problems of the
// list itself: entries judged against another Forgejo version (to be
// judged again) and entries nothing matched (to be removed), so the list
// stays short and true.
func Filter(allowed []Allowed, version string, findings []Finding) (unexpected []Finding, stale []string) {
	byKey := map[string]*Allowed{}
	for i := range allowed {
		byKey[allowed[i].Key] = &allowed[i]
	}
	used := map[string]bool{}
	seen := map[string]bool{}
	for _, f := range findings {
		if a := byKey[f.Key]; a != nil && a.Version == version {
			used[f.Key] = true
			continue
		}
		if !seen[f.String()] {
			seen[f.String()] = true
			unexpected = append(unexpected, f)
		}
	}
	for _, a := range allowed {
		switch {
		case a.Version != version:
			stale = append(stale, fmt.Sprintf("allowlist line %d (%s): judged against Forgejo %s, not %s: check it again", a.Line, a.Key, a.Version, version))
		case !used[a.Key]:
			stale = append(stale, fmt.Sprintf("allowlist line %d (%s): no longer found: remove it", a.Line, a.Key))
		}
	}
	sort.Slice(unexpected, func(i, j int) bool { return unexpected[i].Key < unexpected[j].Key })
	return unexpected, stale
}

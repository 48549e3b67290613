package vault

import (
	"bytes"
	"fmt"

	"github.com/BurntSushi/toml"

	"github.com/disinto/disinto/lib/tomlpos"
)

// Tier is a blast radius (spec 70 §2.2).
type Tier int

// The tiers, in rising order. TierNone is "not given".
const (
	TierNone Tier = iota
	TierLow
	TierMedium
	TierHigh
)

// String returns the tier's name.
func (t Tier) String() string {
	switch t {
	case TierLow:
		return "low"
	case TierMedium:
		return "medium"
	case TierHigh:
		return "high"
	}
	return ""
}

// ParseTier parses "low", "medium" or "high".
func ParseTier(s string) (Tier, error) {
	switch s {
	case "low":
		return TierLow, nil
	case "medium":
		return TierMedium, nil
	case "high":
		return TierHigh, nil
	}
	return TierNone, fmt.Errorf("%q is not a tier (low, medium, high)", s)
}

// DefaultSecrets are the secret names an action may declare when the
// policy lists none (the reference's allowlist, and the forge token a
// release tags with).
var DefaultSecrets = []string{"CLAWHUB_TOKEN", "GITHUB_TOKEN", "CODEBERG_TOKEN", "DEPLOY_KEY", "NPM_TOKEN", "DOCKER_HUB_TOKEN",
	"RELEASE_TOKEN"}

// Policy is vault/policy.toml: each formula's tier, and the allowlists.
type Policy struct {
	// Tiers maps a formula to its tier; an unlisted formula is high.
	Tiers map[string]Tier
	// Secrets is the allowlist of action files' secrets.
	Secrets []string
}

// rawPolicy mirrors the file.
type rawPolicy struct {
	Tiers map[string]string `toml:"tiers"`
	Allow struct {
		Secrets *[]string `toml:"secrets"`
		// Mounts is refused: actions have none any more.
		Mounts any `toml:"mounts"`
	} `toml:"allow"`
}

// DefaultPolicy is the policy of an ops repository without a policy file:
// every formula high, the default allowlists.
func DefaultPolicy() *Policy {
	return &Policy{Tiers: map[string]Tier{}, Secrets: DefaultSecrets}
}

// ParsePolicy decodes a policy file strictly: unknown keys and unknown
// tier values are errors naming file and line.
func ParsePolicy(file string, data []byte) (*Policy, error) {
	var raw rawPolicy
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&raw)
	if err != nil {
		line, key, msg := tomlpos.DecodeError(err)
		return nil, tomlpos.Problems{{File: file, Line: line, Key: key, Msg: msg, Err: ErrSyntax}}
	}
	c := check{file: file, loc: tomlpos.New(string(data))}
	for _, k := range md.Undecoded() {
		c.add(k.String(), ErrUnknownField, "unknown field %q", k.String())
	}
	p := DefaultPolicy()
	for name, v := range raw.Tiers {
		t, err := ParseTier(v)
		if err != nil {
			c.add("tiers."+name, ErrBadValue, "%v", err)
			continue
		}
		p.Tiers[name] = t
	}
	if raw.Allow.Secrets != nil {
		p.Secrets = *raw.Allow.Secrets
		for _, s := range p.Secrets {
			if !secretPattern.MatchString(s) {
				c.add("allow.secrets", ErrBadValue, "%q is not a secret name", s)
			}
		}
	}
	if raw.Allow.Mounts != nil {
		c.add("allow.mounts", ErrRemovedField, "%s", removedFields["mounts"])
	}
	if err := c.ps.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// Tier classifies formula: its policy tier, high when unlisted.
func (p *Policy) Tier(formula string) Tier {
	if t, ok := p.Tiers[formula]; ok {
		return t
	}
	return TierHigh
}

// Classify returns a's tier: the policy's tier of its formula, raised (never
// lowered) by the action's own blast_radius.
func (p *Policy) Classify(a Action) Tier {
	return max(p.Tier(a.Formula), a.BlastRadius)
}

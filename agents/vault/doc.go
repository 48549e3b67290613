// Package vault is the vault role: a project's dispatcher of approved
// vault actions as a scheduled agent, the translation of an action into
// the runner container's job (a bounded reasoning session, or the
// mechanical release job checked against the forge), and the routing of
// mirror pushes to the daemon's own pusher. The actions themselves — their
// schema, tiers, approval checks, claims and results — are lib/vault's.
package vault

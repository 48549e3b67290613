// Package security is the red-team suite: every attack on the factory we
// know of, each a test against the real Gitea server and the real claude
// CLI with the scripted model server. A test here fails when the attack
// works.
package security

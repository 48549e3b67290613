// Package forge is the client for the Forgejo (Gitea-compatible) API used by
// every agent and by provisioning.
//
// A Client talks to one forge as one identity; Client.Repo returns a
// RepoClient scoped to one repository, which is what agents hold. Agents
// declare small interfaces naming the RepoClient methods they call, so that
// forgefake.Repo (same method set, in memory) can stand in for unit tests.
//
// It wraps code.gitea.io/sdk/gitea behind domain types (Issue, PullRequest,
// Review, ...): SDK and wire types never leave the package. All calls take a
// context and go through one HTTP transport that retries 429, 5xx and
// network errors with capped exponential backoff and jitter, honouring
// Retry-After; only idempotent requests (and POSTs known to be safe) are
// repeated, and a 401 is never retried. Lists page at the server maximum
// (50) up to a hard page cap. HTTP statuses map to the sentinel errors of
// errors.go in exactly one place; check them with errors.Is.
//
// The label vocabulary lives in labels.go, the race-free claim protocol in
// claim.go, hidden comment markers in markers.go. The conformance suite
// (conformance_test.go) runs the same cases against forgefake and a real
// Gitea server started by forgetest.
package forge

// Package forge is the client for the Forgejo (Gitea-compatible) API used by
// every agent and by provisioning.
//
// It wraps code.gitea.io/sdk/gitea behind domain types (Issue, PullRequest,
// Review, ...): SDK and wire types never leave the package. All calls take a
// context, go through one retrying HTTP transport (capped exponential backoff
// with jitter on 429, 5xx and network errors, honouring Retry-After), page
// through lists with a hard page cap, and map HTTP statuses to the sentinel
// errors in errors.go in exactly one place.
//
// The label vocabulary lives in labels.go, claims in claim.go and hidden
// comment markers in markers.go.
package forge

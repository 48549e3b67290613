// Package dev is the dev agent: it turns backlog issues into merged pull
// requests.
//
// Each tick (Agent.Tick) is a cheap reconciliation pass: one listing of the
// project's open issues and one of its open pull requests, from which it
// advances every issue this agent holds (CI, review, merge), adopts work a
// previous process left behind, repairs stale in-progress issues, and, when
// nothing of its own is in flight, claims the next ready backlog issue.
//
// The work on one issue is a resumable state machine persisted under
// <data>/state/<project>/issue-<N>/ (state.json, phase file, result file).
// Model sessions (`claude -p`, resumed with the session id for CI failures
// and review feedback) run in tracked background goroutines; waiting for CI
// and review never blocks a goroutine: each tick advances waiting issues one
// step. A daemon killed at any instant resumes from the state file and the
// forge.
package dev

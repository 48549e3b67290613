// Package vault is how an agent acts on the outside world without holding
// a credential that can: it files a typed action in the ops repository,
// and the dispatcher runs it once, in a short-lived runner that alone sees
// the action's declared secrets, after checking how the action reached
// the primary branch (spec 70 §1–§5).
//
// An action is a small TOML file, vault/actions/<id>.toml, naming a
// formula, the reason and the secrets it needs by name. Its blast radius
// comes from vault/policy.toml: a low-tier action is committed directly by
// the vault identity; any other tier is proposed as a pull request
// "vault: <id>" that a human administrator of the ops repository approves.
//
// The dispatcher runs an action only when
//   - it validates (the same Validator the requesting agent and
//     `disinto vault lint` use);
//   - it came through an approved pull request: every commit on the
//     primary branch that touched the file belongs to one merged pull
//     request, whose final head is the commit an administrator approved,
//     and whose head carries the file as it is now; or, for the low tier
//     only, every such commit is the vault identity's, and the forge's
//     record of pushes says the vault bot's account pushed it to the
//     primary branch (a commit's e-mail is anyone's to write; see
//     pushed.go);
//   - merged by rebase or squash, the pull request's commits on the
//     primary branch are new ones. They count as the pull request's when
//     they lie in the window the forge's merge record names (the
//     pull request merged, the first-parent line of as many commits as
//     it has, ending at its merge_commit_sha — Gitea and Forgejo alike),
//     the action before that window is as it was where the branch
//     started, and the action at merge_commit_sha is the approved head's.
//     A commit pushed after the approval, to the branch or to the primary
//     branch, never passes;
//   - no result is recorded for it in the ops repository.
//
// Exactly once: before running, the dispatcher commits a "started" record
// vault/results/<id>.toml as a fast-forward push; of two dispatchers the
// one whose push lands runs the action, the other finds the record when it
// retries. The outcome replaces the record. Results live only in the ops
// repository, so losing a dispatcher's data dir never runs an action
// again, and a dispatcher that dies mid-run leaves "started" for a human
// to judge, never a second run.
//
// Most formulas run in the runner container. A mirror push (formula
// mirror-push, MirrorAction) is mechanical and runs in the daemon itself
// (MirrorPusher, routed by Runners): git, the project's objects and the
// mirror's secret in git's credential helper for the one push.
package vault

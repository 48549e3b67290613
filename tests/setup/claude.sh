#!/usr/bin/env bash
# Installs the pinned claude CLI (npm @anthropic-ai/claude-code) used by the
# lib/claude tests and prints where it lives.
#
# Idempotent: an installed CLI that reports the pinned version is reused.
# Needs node >= 22 and npm, and access to the npm registry on the first run.
#
#   tests/setup/claude.sh                    install if missing, print the path
#   eval "$(tests/setup/claude.sh --env)"    export DISINTO_CLAUDE_BIN
set -euo pipefail
# shellcheck source=tests/setup/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

version=2.1.328
cache="${XDG_CACHE_HOME:-$HOME/.cache}/disinto/claude-code/${version}"
bin="${cache}/node_modules/.bin/claude"

installed() {
	[[ -x "${bin}" ]] && "${bin}" --version 2>/dev/null | grep -q "^${version} "
}

if ! installed; then
	echo "installing @anthropic-ai/claude-code@${version} into ${cache}" >&2
	npm_install "${cache}" "@anthropic-ai/claude-code@${version}"
	# The package's bin entry is a placeholder until its postinstall copies
	# the native binary from the platform package over it. If npm skipped
	# the install script, do that step here.
	if ! installed; then
		case "$(uname -m)" in
		x86_64) arch=x64 ;;
		aarch64 | arm64) arch=arm64 ;;
		*) echo "unsupported architecture $(uname -m)" >&2; exit 1 ;;
		esac
		native="${cache}/node_modules/@anthropic-ai/claude-code-linux-${arch}/claude"
		[[ -x "${native}" ]] || { echo "native claude binary missing at ${native}" >&2; exit 1; }
		cp "${native}" "${cache}/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
	fi
	installed || { echo "claude at ${bin} does not report version ${version}" >&2; exit 1; }
fi

# As root, model sessions run under uids of their own (lib/sandbox), which
# cannot enter root's home: publish the binary where every user reaches it,
# as the agents image does with /usr/local/bin/claude.
if [[ "$(id -u)" == 0 ]]; then
	shared="/usr/local/lib/disinto/claude-code/${version}/claude"
	if [[ ! -x "${shared}" ]]; then
		install -d -m 0755 "$(dirname "${shared}")"
		ln -f "$(readlink -f "${bin}")" "${shared}" 2>/dev/null || cp "$(readlink -f "${bin}")" "${shared}"
		chmod 0755 "${shared}"
	fi
	bin="${shared}"
fi

if [[ "${1:-}" == "--env" ]]; then
	printf 'export DISINTO_CLAUDE_BIN=%q\n' "${bin}"
else
	printf 'claude CLI: %s\n' "${bin}"
fi

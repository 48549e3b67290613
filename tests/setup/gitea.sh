#!/usr/bin/env bash
# Builds the Gitea server used by the forge integration tests
# (lib/forge/forgetest) and prints where the binary and its source live.
#
# Idempotent: an existing binary is reused. The cold build takes several
# minutes; later runs return in seconds.
#
#   tests/setup/gitea.sh            build if missing, print paths
#   eval "$(tests/setup/gitea.sh --env)"   export DISINTO_GITEA_BIN/SRC
set -euo pipefail

version=v1.26.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/disinto/gitea/${version}"
bin="${cache}/gitea"
# shellcheck source=tests/setup/lib.sh
source "${root}/tests/setup/lib.sh"

cd "${root}/tools/gitea"
export GOFLAGS=-mod=mod
# Gitea's sqlite driver (mattn/go-sqlite3) needs cgo and a C compiler.
export CGO_ENABLED=1

build() {
	if [[ -x "${bin}" ]]; then
		return
	fi
	echo "building gitea ${version} into ${bin} (cold build takes minutes)" >&2
	go build -trimpath -tags 'sqlite sqlite_unlock_notify' -ldflags '-s -w' \
		-o "${bin}.tmp" .
	mv "${bin}.tmp" "${bin}"
}
locked "${bin}" build

src="$(go list -m -f '{{.Dir}}' code.gitea.io/gitea)"
if [[ -z "${src}" || ! -d "${src}/options/locale" ]]; then
	go mod download code.gitea.io/gitea
	src="$(go list -m -f '{{.Dir}}' code.gitea.io/gitea)"
fi
# Record the source dir next to the binary so tests find it without Go.
printf '%s\n' "${src}" >"${cache}/source-dir"

if [[ "${1:-}" == "--env" ]]; then
	printf 'export DISINTO_GITEA_BIN=%q\nexport DISINTO_GITEA_SRC=%q\n' "${bin}" "${src}"
else
	printf 'gitea binary: %s\ngitea source: %s\n' "${bin}" "${src}"
fi

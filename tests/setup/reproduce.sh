#!/usr/bin/env bash
# Builds the images the reproduce sidecar tests (agents/reproduce) run on
# the local Docker engine: docker/runner and docker/reproduce on top of it
# (Debian's chromium and Node.js, the pinned @playwright/mcp), from the
# local debian:bookworm-slim that tests/setup/docker.sh makes.
#
# The pair is labelled with the hash of the two Dockerfiles; the tests use
# an image whose label matches and build one otherwise. A build is saved
# under ${XDG_CACHE_HOME:-$HOME/.cache}/disinto/images, so a fresh engine
# loads it in seconds instead of fetching chromium and npm packages again.
# It also installs the pinned @playwright/mcp on the host under the same
# cache. Idempotent. Needs the engine running (tests/setup/docker.sh) and
# npm.
set -euo pipefail
# shellcheck source=tests/setup/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/disinto/images"
runner_image=repro-test/runner:test
reproduce_image=repro-test/reproduce:test
label=org.disinto.test.dockerfiles

playwright_mcp_version=0.0.56 # as docker/reproduce/Dockerfile pins it
log() { printf 'reproduce.sh: %s\n' "$*" >&2; }

# The same MCP server on the host, for the test that drives it with
# Debian's chromium (tests/setup/chromium.sh) and the real CLI outside a
# container.
host_mcp="${XDG_CACHE_HOME:-$HOME/.cache}/disinto/playwright-mcp/${playwright_mcp_version}"
if [[ ! -f "${host_mcp}/node_modules/@playwright/mcp/cli.js" ]]; then
	log "installing @playwright/mcp@${playwright_mcp_version} into ${host_mcp}"
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm_install "${host_mcp}" "@playwright/mcp@${playwright_mcp_version}"
fi

# The hash the tests compute the same way: sha256 of the runner's
# Dockerfile followed by the reproduce image's.
hash="$(cat "${root}/docker/runner/Dockerfile" "${root}/docker/reproduce/Dockerfile" | sha256sum | cut -c1-64)"
tarball="${cache}/reproduce-${hash:0:16}.tar"

current() {
	[[ "$(docker image inspect --format "{{index .Config.Labels \"${label}\"}}" "${reproduce_image}" 2>/dev/null)" == "${hash}" ]]
}

if current; then
	exit 0
fi
if [[ -s "${tarball}" ]]; then
	log "loading ${reproduce_image} from ${tarball}"
	docker load -q -i "${tarball}" >/dev/null
	if current; then
		exit 0
	fi
fi
log "building ${runner_image} and ${reproduce_image} (a few minutes, once)"
# The runner image builds the disinto binary: its context is the module.
DOCKER_BUILDKIT=0 docker build -q -f "${root}/docker/runner/Dockerfile" -t "${runner_image}" \
	--label org.disinto.test-standin=true --label "${label}=${hash}" "${root}" >/dev/null
DOCKER_BUILDKIT=0 docker build -q -t "${reproduce_image}" --build-arg "RUNNER_IMAGE=${runner_image}" \
	--label org.disinto.test-standin=true --label "${label}=${hash}" "${root}/docker/reproduce" >/dev/null
mkdir -p "${cache}"
rm -f "${cache}"/reproduce-*.tar
# Uncompressed: compressing two gigabytes costs more than it saves.
docker save -o "${tarball}.tmp" "${reproduce_image}"
mv "${tarball}.tmp" "${tarball}"
log "saved ${tarball}"

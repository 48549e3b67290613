#!/usr/bin/env bash
# Prepares everything the integration suites need, each step timed
# ("timing: setup/NAME Ns"): the Gitea server, the pinned claude CLI,
# Debian's chromium and caddy, the Docker engine with the local base
# images, and the reproduce sidecar's images. Each step is idempotent and
# takes seconds when its cache under ~/.cache/disinto is warm.
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for step in gitea claude chromium caddy docker reproduce; do
	"${dir}/../timed.sh" "setup/${step}" "${dir}/${step}.sh"
done

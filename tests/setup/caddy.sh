#!/usr/bin/env bash
# Installs Debian's caddy for the edge's tests (lib/edge runs the real
# binary to validate the generated Caddyfile and to proxy through it) and
# prints where it lives.
#
# Idempotent: an installed caddy is reused. Needs root and Debian's
# archive on the first run; DISINTO_CADDY names another binary. The
# package's service is never started here (the tests start their own).
set -euo pipefail
# shellcheck source=tests/setup/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bin="${DISINTO_CADDY:-/usr/bin/caddy}"
if [[ ! -x "${bin}" ]]; then
	if [[ "$(id -u)" != 0 ]]; then
		echo "caddy not found at ${bin}: apt-get install -y caddy (as root)" >&2
		exit 1
	fi
	echo "installing caddy" >&2
	apt_install caddy
fi
"${bin}" version >&2
echo "${bin}"

#!/usr/bin/env bash
# Installs Debian's chromium for the status page's browser test
# (tests/e2e, driven with chromedp) and prints where it lives.
#
# Idempotent: an installed chromium is reused. Needs root and Debian's
# archive on the first run; DISINTO_CHROMIUM names another binary.
set -euo pipefail
# shellcheck source=tests/setup/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bin="${DISINTO_CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "${bin}" ]]; then
	if [[ "$(id -u)" != 0 ]]; then
		echo "chromium not found at ${bin}: apt-get install -y chromium (as root)" >&2
		exit 1
	fi
	echo "installing chromium" >&2
	apt_install --recommends chromium
fi
"${bin}" --version >&2
echo "${bin}"

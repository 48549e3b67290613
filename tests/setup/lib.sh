# Shared by the setup scripts (sourced, not run): installing from the
# registries this machine reaches, with a failure that names what could
# not be had.

# apt_install [--recommends] PKG...: installs Debian packages as root. Runs
# `apt-get update` first unless the package lists are fresh (under an
# hour old). A failure names each package the archive has no candidate
# for, or else all of them, and exits.
apt_install() {
	local recommends=--no-install-recommends
	if [[ "${1:-}" == "--recommends" ]]; then
		recommends=
		shift
	fi
	if [[ "$(id -u)" != 0 ]]; then
		printf 'setup: need root to install: %s (sudo apt-get install %s)\n' "$*" "$*" >&2
		exit 1
	fi
	local lists=/var/lib/apt/lists
	if [[ -z "$(find "${lists}" -maxdepth 1 -name '*_Packages*' -mmin -60 -print -quit 2>/dev/null)" ]]; then
		if ! apt-get update -qq; then
			printf 'setup: apt-get update failed: Debian'"'"'s archive did not answer; needed for: %s\n' "$*" >&2
			exit 1
		fi
	fi
	local out
	if out="$(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${recommends} "$@" 2>&1)"; then
		return
	fi
	local missing=() p
	for p in "$@"; do
		if ! apt-cache policy "${p}" 2>/dev/null | grep -q 'Candidate: [^(]'; then
			missing+=("${p}")
		fi
	done
	if ((${#missing[@]})); then
		printf 'setup: Debian'"'"'s archive has no package %s\n' "${missing[*]}" >&2
	else
		printf 'setup: apt-get could not install %s:\n%s\n' "$*" "$(tail -n 5 <<<"${out}")" >&2
	fi
	exit 1
}

# npm_install PREFIX PACKAGE@VERSION: installs one pinned npm package under
# PREFIX; a failure names the package and the registry's last words.
npm_install() {
	local prefix="$1" pkg="$2" out
	command -v npm >/dev/null || apt_install nodejs npm
	mkdir -p "${prefix}"
	if ! out="$(npm install --prefix "${prefix}" --no-audit --no-fund --loglevel=error "${pkg}" 2>&1)"; then
		printf 'setup: npm could not install %s:\n%s\n' "${pkg}" "$(tail -n 5 <<<"${out}")" >&2
		exit 1
	fi
}

# locked PATH CMD...: runs CMD holding an exclusive lock on PATH.lock, so
# that setups running at once (two test runs on one machine) build a
# cached thing once, one after the other, and never move each other's
# temporary files. CMD should return at once when PATH already exists.
locked() {
	local lock="$1.lock"
	shift
	mkdir -p "$(dirname "${lock}")"
	(
		flock 9
		"$@"
	) 9>"${lock}"
}

#!/usr/bin/env bash
# Prepares what the compose stack test (tests/compose) needs on a machine
# that reaches Debian's archive and the Go module proxy but no container
# registry:
#
#   1. a Docker engine (Debian's docker.io) and mmdebstrap, via apt-get;
#   2. Docker Compose v2, built from its Go module and installed as the
#      `docker compose` CLI plugin;
#   3. a running dockerd (started in the background when none answers);
#   4. local base images under the names the Dockerfiles use:
#        debian:bookworm-slim   mmdebstrap minbase, imported with docker import
#        golang:1.26-bookworm   that image plus this machine's Go toolchain, the
#                               build stage of the agents and runner images
#      and the test forge image (the Gitea test server laid out like Forgejo).
#
# Idempotent: every step checks first and is skipped when already done; the
# slow artefacts (compose binary, rootfs tarball) are cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/disinto, so later runs take seconds.
#
#   tests/setup/docker.sh            do everything
#   tests/setup/docker.sh --engine   only install and start the engine
set -euo pipefail
# shellcheck source=tests/setup/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/disinto"
compose_version=v2.40.3
gitea_version=v1.26.0
forge_image="disinto-test/forge:gitea-${gitea_version}"
debian_suite=bookworm
debian_mirror=http://deb.debian.org/debian
plugins_dir="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"
# TLS roots the stand-in images trust: the host's, which may include a CA
# that re-signs traffic on this network.
host_ca="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"

log() { printf 'docker.sh: %s\n' "$*" >&2; }
now() { date +%s; }
# timed LABEL CMD...: runs CMD and logs how long it took.
timed() {
	local label="$1" start
	shift
	start="$(now)"
	"$@"
	log "${label}: $(($(now) - start))s"
}

install_packages() {
	local missing=()
	command -v dockerd >/dev/null || missing+=(docker.io)
	command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
	command -v iptables >/dev/null || missing+=(iptables)
	if ((${#missing[@]} == 0)); then
		return
	fi
	log "installing ${missing[*]}"
	apt_install "${missing[@]}"
}

install_compose() {
	if docker compose version >/dev/null 2>&1; then
		return
	fi
	local bin="${cache}/bin/docker-compose-${compose_version}"
	build_compose() {
		if [[ -x "${bin}" ]]; then
			return
		fi
		log "building docker compose ${compose_version} from its Go module (a few minutes, once)"
		local mod
		# Compose's go.mod has exclude directives, so `go install pkg@version`
		# refuses it; build inside the downloaded module as the main module.
		mod="$(cd / && GOFLAGS=-mod=mod go mod download -json "github.com/docker/compose/v2@${compose_version}" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
		if [[ -z "${mod}" || ! -d "${mod}" ]]; then
			log "could not download github.com/docker/compose/v2@${compose_version}"
			exit 1
		fi
		mkdir -p "${cache}/bin"
		(cd "${mod}" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath \
			-ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=${compose_version}" \
			-o "${bin}.tmp" ./cmd)
		mv "${bin}.tmp" "${bin}"
	}
	locked "${bin}" build_compose
	mkdir -p "${plugins_dir}"
	install -m 0755 "${bin}" "${plugins_dir}/docker-compose"
	docker compose version >&2
}

engine_up() { docker info >/dev/null 2>&1; }

start_engine() {
	if engine_up; then
		return
	fi
	if [[ -n "${DOCKER_HOST:-}" ]]; then
		log "DOCKER_HOST=${DOCKER_HOST} does not answer; not starting a local engine"
		exit 1
	fi
	mkdir -p "${cache}"
	log "starting dockerd (log: ${cache}/dockerd.log)"
	# setsid detaches the daemon from this script's process group so it keeps
	# running after the script (and the shell that ran it) exits.
	setsid dockerd >>"${cache}/dockerd.log" 2>&1 </dev/null &
	local i
	for ((i = 0; i < 120; i++)); do
		if engine_up; then
			return
		fi
		sleep 0.5
	done
	log "dockerd did not answer within 60s; last log lines:"
	tail -n 20 "${cache}/dockerd.log" >&2
	exit 1
}

# describe_engine prints what a failure on another machine is diagnosed
# from: the engine's version, storage driver and cgroup setup, and each
# network with the subnet and gateway it reports (a freshly started
# Debian engine reports the default bridge without a gateway; the tests
# find the host's address on it without relying on one).
describe_engine() {
	docker version --format 'engine: server {{.Server.Version}} (API {{.Server.APIVersion}}), client {{.Client.Version}}' >&2 || true
	docker info --format 'engine: storage driver {{.Driver}}, cgroup {{.CgroupDriver}} v{{.CgroupVersion}}, root {{.DockerRootDir}}, {{.Images}} images, {{.Containers}} containers, swarm {{.Swarm.LocalNodeState}}' >&2 || true
	local id
	for id in $(docker network ls -q); do
		docker network inspect --format 'engine: network {{.Name}} driver {{.Driver}}{{range .IPAM.Config}} subnet {{.Subnet}} gateway {{if .Gateway}}{{.Gateway}}{{else}}(none){{end}}{{end}}{{with index .Options "com.docker.network.bridge.name"}} interface {{.}}{{end}}' "${id}" >&2 || true
	done
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

debian_image() {
	if have_image debian:bookworm-slim; then
		return
	fi
	local tar="${cache}/images/debian-${debian_suite}-minbase.tar"
	build_rootfs() {
		if [[ -s "${tar}" ]]; then
			return
		fi
		log "building the ${debian_suite} rootfs with mmdebstrap"
		mmdebstrap --quiet --variant=minbase --format=tar "${debian_suite}" "${tar}.tmp" \
			"deb ${debian_mirror} ${debian_suite} main" \
			"deb ${debian_mirror} ${debian_suite}-updates main" \
			"deb ${debian_mirror}-security ${debian_suite}-security main"
		mv "${tar}.tmp" "${tar}"
	}
	locked "${tar}" build_rootfs
	if ! have_image disinto-test/debian-rootfs:bookworm; then
		docker import --change 'CMD ["bash"]' \
			--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			"${tar}" disinto-test/debian-rootfs:bookworm >/dev/null
	fi
	local ctx="${work}/debian"
	mkdir -p "${ctx}"
	cp "${host_ca}" "${ctx}/host-ca.crt"
	DOCKER_BUILDKIT=0 docker build -q -f "${root}/docker/test/debian.Dockerfile" \
		-t debian:bookworm-slim --label org.disinto.test-standin=true "${ctx}" >/dev/null
}

golang_image() {
	if have_image golang:1.26-bookworm; then
		return
	fi
	local goroot
	goroot="$(go env GOROOT)"
	DOCKER_BUILDKIT=0 docker build -q -f "${root}/docker/test/golang.Dockerfile" \
		-t golang:1.26-bookworm --label org.disinto.test-standin=true "${goroot}" >/dev/null
}

forge_image() {
	# Rebuilt when the entrypoint changed (it also holds the forgejo CLI's
	# accepted commands and flags).
	local sum
	sum="$(sha256sum "${root}/docker/test/forge-entrypoint.sh" | cut -d' ' -f1)"
	if have_image "${forge_image}" && [[ "$(docker image inspect -f '{{index .Config.Labels "org.disinto.entrypoint"}}' "${forge_image}")" == "${sum}" ]]; then
		return
	fi
	local env ctx="${work}/forge"
	env="$("${root}/tests/setup/gitea.sh" --env)"
	eval "${env}"
	mkdir -p "${ctx}"
	cp "${DISINTO_GITEA_BIN}" "${ctx}/gitea"
	cp -r "${DISINTO_GITEA_SRC}/options" "${DISINTO_GITEA_SRC}/templates" "${ctx}/"
	mkdir -p "${ctx}/public"
	if [[ -d "${DISINTO_GITEA_SRC}/public" ]]; then
		cp -r "${DISINTO_GITEA_SRC}/public/." "${ctx}/public/"
	fi
	chmod -R u+w "${ctx}"
	cp "${root}/docker/test/forge-entrypoint.sh" "${ctx}/"
	DOCKER_BUILDKIT=0 docker build -q -f "${root}/docker/test/forge.Dockerfile" \
		-t "${forge_image}" --label org.disinto.test-standin=true --label "org.disinto.entrypoint=${sum}" "${ctx}" >/dev/null
}

main() {
	work="$(mktemp -d)"
	trap 'rm -rf "${work}"' EXIT
	timed "packages" install_packages
	timed "engine" start_engine
	describe_engine
	if [[ "${1:-}" == "--engine" ]]; then
		return
	fi
	timed "compose" install_compose
	timed "image debian:bookworm-slim" debian_image
	timed "image golang:1.26-bookworm" golang_image
	timed "image ${forge_image}" forge_image
}

main "$@"

# disinto — build and test.
#
#   make test    every suite: formatting, vet, staticcheck, formula lint,
#                unit and race tests, the real-forge, real-claude and
#                container suites (prerequisites are built first, cached
#                under ~/.cache/disinto)
#   make build   the disinto binary in bin/
#   make quick   unit tests only (-short: no real forge, CLI or engine)

SHELL := /usr/bin/env bash
CACHE ?= $(HOME)/.cache/disinto
GOBIN_CACHE := $(CACHE)/bin
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(GOBIN_CACHE)/staticcheck-$(STATICCHECK_VERSION)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GO_TEST_FLAGS ?= -race -count=1 -timeout 45m
MODULE := github.com/disinto/disinto

.PHONY: test quick build images setup lint vet fmt-check staticcheck formula-lint cross forgejo-contract helm-chart unit clean

# Each step prints "timing: STEP Ns" (tests/timed.sh); .ci/run adds up
# the run from these lines and go test's per-package times.
test:
	@tests/timed.sh setup $(MAKE) --no-print-directory setup
	@tests/timed.sh lint $(MAKE) --no-print-directory lint
	@tests/timed.sh unit $(MAKE) --no-print-directory unit

quick:
	go test -short -race ./...

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o bin/disinto ./cmd/disinto

# The stack's images, their binaries stamped with the checkout's version.
images:
	DISINTO_VERSION=$(VERSION) docker compose build

# Prerequisites of the integration suites; each script is idempotent and
# fast when its cache is warm. chromium.sh installs Debian's chromium for
# the browser tests (status page, chat login), caddy.sh Debian's caddy for
# the edge's tests. docker.sh installs Debian's engine (as root) and starts
# it, for the compose stack test.
setup:
	tests/setup/all.sh

lint: fmt-check vet staticcheck formula-lint cross forgejo-contract helm-chart

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	go vet ./...

$(STATICCHECK):
	mkdir -p $(GOBIN_CACHE)
	GOBIN=$(GOBIN_CACHE) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(GOBIN_CACHE)/staticcheck $@

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

formula-lint:
	go run ./cmd/disinto formula lint formulas/*.toml

# The product against Forgejo's source (API routes and fields, `forgejo
# admin` flags, webhook headers), which no test can run here.
forgejo-contract:
	cd tools/forgejocheck && go test ./...

# The Helm chart (deploy/helm/disinto) rendered as `helm template` renders
# it, every object decoded strictly into the Kubernetes API types and
# compared with golden files (go test -update in tools/helmtest rewrites
# them). Its own module: Helm and the Kubernetes API stay out of go.mod.
helm-chart:
	cd tools/helmtest && go test ./...

# The CLI also builds for macOS (operators run status and logs there).
cross:
	GOOS=darwin GOARCH=arm64 go build -o /dev/null ./cmd/disinto

# The fault suite runs after the others, alone: it measures how the daemon
# converges under injected faults, against a forge whose checks lag when
# the other suites load the machine at the same time.
#
# go test runs as many test binaries at once as there are cores, in the
# order it is given them: the slowest packages go first (SLOW_FIRST, by a
# cold run's times, which .ci/run prints), so that no long suite starts
# last and runs alone. A package missing from the list still runs, after
# them.
SLOW_FIRST := ./tests/e2e ./tests/compose ./agents/architect ./lib/release ./agents/planner ./lib/vault \
	./lib/forge ./lib/provision ./lib/runner ./agents/gardener ./tests/security ./agents/reproduce
unit:
	@slow="$$(go list $(SLOW_FIRST))"; \
	rest="$$(go list ./... | grep -v -x -F -e '$(MODULE)/tests/faults' $$(printf -- '-e %s ' $$slow))"; \
	echo "go test $(GO_TEST_FLAGS) <$$(echo $$slow $$rest | wc -w) packages, slowest first>"; \
	go test $(GO_TEST_FLAGS) $$slow $$rest
	go test $(GO_TEST_FLAGS) ./tests/faults

clean:
	rm -rf bin

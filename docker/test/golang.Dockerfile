# Test-only stand-in for golang:1.26-bookworm on machines that reach no
# container registry: the local Debian base image plus the host's Go
# toolchain. Built by tests/setup/docker.sh with the Go root as context:
#   docker build -f docker/test/golang.Dockerfile -t golang:1.26-bookworm "$(go env GOROOT)"
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates git \
    && rm -rf /var/lib/apt/lists/*
COPY . /usr/local/go
ENV GOPATH=/go PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN go version
WORKDIR /go

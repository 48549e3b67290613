# Test-only stand-in for the Forgejo image: the Gitea server the forge tests
# use (built by tests/setup/gitea.sh), laid out like the Forgejo image so the
# product compose file runs unchanged against it: user git (uid 1000), data
# in /data, config at /data/gitea/conf/app.ini, `forgejo` on PATH (the
# entrypoint, which takes only the commands and flags the product runs),
# and a healthcheck-friendly wget.
#
# Context: a directory holding the gitea binary and the options/, templates/
# and public/ trees of its module source (assembled by tests/setup/docker.sh).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates git wget \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --uid 1000 --user-group --home-dir /data/git --no-create-home --shell /bin/sh git \
    && install -d -o git -g git /data /data/git /data/gitea /data/gitea/conf
COPY options /app/gitea/options
COPY templates /app/gitea/templates
COPY public /app/gitea/public
COPY gitea /app/gitea/gitea
COPY forge-entrypoint.sh /usr/local/bin/forge-entrypoint
RUN ln -s /app/gitea/gitea /usr/local/bin/gitea \
    && ln -s /usr/local/bin/forge-entrypoint /usr/local/bin/forgejo \
    && chmod 0755 /usr/local/bin/forge-entrypoint
ENV USER=git GITEA_CUSTOM=/data/gitea GITEA_WORK_DIR=/data/gitea
USER git
VOLUME ["/data"]
EXPOSE 3000
ENTRYPOINT ["/usr/local/bin/forge-entrypoint"]

#!/bin/sh
# The edge's start: the configuration is checked and written first (a bad
# setting stops here, before anything listens; a missing secret only
# disables the routes that need it, with a warning, and the forge is still
# served), then caddy replaces this shell, so that it alone is the
# container's process and nothing else can end it. The container's
# arguments are flags of the generation: an operator who wants the edge to
# refuse to start without its secrets gives it --require-secrets (compose:
# command: [--require-secrets]).
set -eu
disinto edge caddyfile "$@" --out /config/Caddyfile
exec caddy run --config /config/Caddyfile --adapter caddyfile

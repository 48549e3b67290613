#!/bin/sh
# The edge's start: the configuration is checked and written first (a
# missing secret or a bad setting stops here, before anything listens),
# then caddy replaces this shell, so that it alone is the container's
# process and nothing else can end it.
set -eu
disinto edge caddyfile --require-secrets --out /config/Caddyfile
exec caddy run --config /config/Caddyfile --adapter caddyfile

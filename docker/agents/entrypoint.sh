#!/bin/sh
# Entrypoint of the agents image (run under tini).
#
#   (no arguments) or daemon ...  the preflight, then the daemon: `disinto
#                                 doctor` prints one line per finding with
#                                 its fix (docker compose logs shows them),
#                                 and a blocking one keeps the daemon from
#                                 starting
#   claude ...                    the claude CLI itself, for logging in:
#                                 docker compose run --rm agents claude auth login
#   anything else                 a disinto command: init, status, doctor, ...
set -e
if [ "$#" -eq 0 ]; then
	set -- daemon
fi
case "$1" in
claude)
	shift
	exec claude "$@"
	;;
daemon)
	if ! disinto doctor; then
		echo "disinto doctor found blocking problems (the lines above, each with its fix): the daemon does not start" >&2
		exit 1
	fi
	;;
esac
exec disinto "$@"

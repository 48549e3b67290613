#!/bin/sh
# Entrypoint of the test forge image: writes app.ini on first start from the
# FORGEJO__section__KEY variables the product compose file sets (the subset
# the tests need), then runs the server. With arguments it runs them instead,
# like the Forgejo image.
#
# Run as `forgejo` (the image links that name here) it is Forgejo's CLI:
# Gitea's, limited to the commands and flags the product runs, so a
# command Gitea has and Forgejo lacks fails here too.
set -eu

# forgejo_flags COMMAND: the flags the product passes to a `forgejo`
# command, a trailing = marking a flag that takes a value. Kept equal to
# what the product passes, and checked against Forgejo's own CLI, by
# tools/forgejocheck.
forgejo_flags() {
	case "$1" in
	"admin user list") echo "admin" ;;
	"admin user create") echo "admin username= email= random-password random-password-length= must-change-password" ;;
	"admin user must-change-password") echo "unset" ;;
	"admin user generate-access-token") echo "username= token-name= scopes= raw" ;;
	*) return 1 ;;
	esac
}

# forgejo_cli ARGS...: refuses what forgejo_flags does not list, then runs
# Gitea's CLI with the same arguments.
forgejo_cli() {
	refuse() {
		echo "forgejo (test stand-in): $*" >&2
		exit 2
	}
	[ "$#" -ge 3 ] || refuse "unsupported command: $*"
	flags="$(forgejo_flags "$1 $2 $3")" || refuse "unsupported command: $1 $2 $3"
	skip=3 value=""
	for a in "$@"; do
		if [ "$skip" -gt 0 ]; then
			skip=$((skip - 1))
			continue
		fi
		if [ -n "$value" ]; then
			value=""
			continue
		fi
		case "$a" in
		--*=*) name="${a%%=*}" ;;
		-*) name="$a" ;;
		*) continue ;;
		esac
		name="${name#--}"
		case " $flags " in
		*" $name= "*) [ "$name" != "${a#--}" ] || value=1 ;;
		*" $name "*) ;;
		*) refuse "unsupported flag $a of $1 $2 $3" ;;
		esac
	done
	exec gitea "$@"
}

if [ "$(basename "$0")" = forgejo ]; then
	forgejo_cli "$@"
fi

if [ "$#" -gt 0 ]; then
	exec "$@"
fi

conf=/data/gitea/conf/app.ini
if [ ! -s "$conf" ]; then
	mkdir -p /data/gitea/conf /data/git/repositories
	secret="$(gitea generate secret SECRET_KEY)"
	internal="$(gitea generate secret INTERNAL_TOKEN)"
	cat >"$conf.tmp" <<INI
APP_NAME = disinto test forge
RUN_USER = git
RUN_MODE = prod
WORK_PATH = /data/gitea

[server]
PROTOCOL = http
HTTP_ADDR = 0.0.0.0
HTTP_PORT = ${FORGEJO__server__HTTP_PORT:-3000}
ROOT_URL = ${FORGEJO__server__ROOT_URL:-http://localhost:3000/}
DISABLE_SSH = true
START_SSH_SERVER = false
APP_DATA_PATH = /data/gitea
STATIC_ROOT_PATH = /app/gitea
OFFLINE_MODE = true
LFS_START_SERVER = false

[database]
DB_TYPE = sqlite3
PATH = /data/gitea/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = /data/git/repositories

[security]
INSTALL_LOCK = true
SECRET_KEY = ${secret}
INTERNAL_TOKEN = ${internal}

[service]
DISABLE_REGISTRATION = ${FORGEJO__service__DISABLE_REGISTRATION:-true}

[webhook]
ALLOWED_HOST_LIST = ${FORGEJO__webhook__ALLOWED_HOST_LIST:-private}
DELIVER_TIMEOUT = 10

[mailer]
ENABLED = false

[cron.update_checker]
ENABLED = false

[log]
MODE = console
LEVEL = Info
INI
	mv "$conf.tmp" "$conf"
fi

exec gitea web --config "$conf"

#!/bin/sh
# Entrypoint of the test forge image: writes app.ini on first start from the
# FORGEJO__section__KEY variables the product compose file sets (the subset
# the tests need), then runs the server. With arguments it runs them instead,
# like the Forgejo image.
set -eu

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

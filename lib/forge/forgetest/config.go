package forgetest

import (
	"fmt"
	"path/filepath"
)

// appINI renders a minimal, fast configuration: sqlite, no mail, no cron,
// in-memory queues and caches, cheap password hashing, webhooks allowed to
// any host (tests receive them on loopback); Actions and the OAuth2
// provider only when o asks.
func appINI(dir, src string, port int, o Options) string {
	data := filepath.Join(dir, "data")
	return fmt.Sprintf(`I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
APP_NAME = disinto-test
RUN_MODE = prod
WORK_PATH = %[1]s

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[3]d
ROOT_URL = http://127.0.0.1:%[3]d/
DOMAIN = 127.0.0.1
STATIC_ROOT_PATH = %[2]s
APP_DATA_PATH = %[4]s
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false

[database]
DB_TYPE = sqlite3
PATH = %[4]s/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = %[1]s/repos
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = disinto-test-secret-key
PASSWORD_HASH_ALGO = bcrypt$4
MIN_PASSWORD_LENGTH = 6
PASSWORD_COMPLEXITY = off

[service]
DISABLE_REGISTRATION = true
DEFAULT_ALLOW_CREATE_ORGANIZATION = true
ENABLE_NOTIFY_MAIL = false

[mailer]
ENABLED = false

[oauth2]
ENABLED = %[6]t
JWT_SECRET = ZGlzaW50by10ZXN0LW9hdXRoMi1qd3Qtc2VjcmV0ISE

[actions]
ENABLED = %[5]t
; Forgejo's workflow directories, the first that exists counting.
WORKFLOW_DIRS = .forgejo/workflows,.gitea/workflows,.github/workflows

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[queue]
TYPE = channel

[cache]
ADAPTER = memory

[session]
PROVIDER = memory

[picture]
DISABLE_GRAVATAR = true
ENABLE_FEDERATED_AVATAR = false

[webhook]
ALLOWED_HOST_LIST = *
DELIVER_TIMEOUT = 5

[log]
MODE = file
LEVEL = Warn
ROOT_PATH = %[1]s/log
`, dir, src, port, data, o.Actions, o.OAuth2)
}

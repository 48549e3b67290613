package e2e

import _ "github.com/disinto/disinto/tests/internal/rig"

package forgetest

import _ "github.com/disinto/disinto/lib/forge"

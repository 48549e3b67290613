package low

import _ "github.com/disinto/disinto/agents/dev"

// unregistered names a setting nobody registered.
const unregistered = "DISINTO_NOT_A_SETTING"

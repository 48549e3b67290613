package daemon

import _ "github.com/disinto/disinto/agents/dev"

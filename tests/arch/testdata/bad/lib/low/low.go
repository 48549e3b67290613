package low

import _ "github.com/disinto/disinto/agents/dev"

package review

import _ "github.com/disinto/disinto/cmd/disinto"

package config

import _ "github.com/disinto/disinto/lib/low"

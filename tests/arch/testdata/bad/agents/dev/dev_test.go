package dev

import _ "github.com/disinto/disinto/lib/forge/forgetest"

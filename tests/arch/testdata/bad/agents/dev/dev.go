package dev

import (
	_ "github.com/disinto/disinto/agents/review"
	_ "github.com/disinto/disinto/lib/forge/forgetest"
	_ "github.com/disinto/disinto/lib/low"
)

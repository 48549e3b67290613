package main

import _ "github.com/disinto/disinto/tests/internal/rig"

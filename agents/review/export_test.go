package review

import "github.com/disinto/disinto/lib/config"

// CIRecheck is ciRecheck of a project that sets none, for the black-box
// tests.
const CIRecheck = config.DefaultCIRecheck

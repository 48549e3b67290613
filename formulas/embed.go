// Package formulas ships the default formulas inside the binary. Each
// <name>.toml is parsed and validated by lib/formula; agents resolve
// overrides from their .profile and the project's ops repository on top.
package formulas

import "embed"

// FS holds every shipped formula as <name>.toml at its root.
//
//go:embed *.toml
var FS embed.FS

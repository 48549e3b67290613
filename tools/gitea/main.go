// Command gitea builds the Gitea server used by the forge integration tests
// (lib/forge/forgetest). It mirrors the upstream main package of
// code.gitea.io/gitea so the binary behaves like a release build.
package main

import (
	"os"
	"runtime"
	"time"

	"code.gitea.io/gitea/cmd"
	"code.gitea.io/gitea/modules/log"
	"code.gitea.io/gitea/modules/setting"

	// Register the document renderers upstream registers.
	_ "code.gitea.io/gitea/modules/markup/asciicast"
	_ "code.gitea.io/gitea/modules/markup/console"
	_ "code.gitea.io/gitea/modules/markup/csv"
	_ "code.gitea.io/gitea/modules/markup/markdown"
	_ "code.gitea.io/gitea/modules/markup/orgmode"

	"github.com/urfave/cli/v3"
)

// Version is the Gitea version reported by the binary.
const Version = "1.26.0"

func main() {
	builtWith := " built with " + runtime.Version() + " : sqlite, sqlite_unlock_notify"
	setting.AppVer = Version
	setting.AppBuiltWith = builtWith
	setting.AppStartTime = time.Now().UTC()

	cli.OsExiter = func(code int) {
		log.GetManager().Close()
		os.Exit(code)
	}
	app := cmd.NewMainApp(cmd.AppVersion{Version: Version, Extra: builtWith})
	_ = cmd.RunMainApp(app, os.Args...)
	log.GetManager().Close()
}

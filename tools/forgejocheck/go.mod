// Module forgejocheck checks the product against Forgejo's source: the API
// routes, parameters and fields the forge client uses, the `forgejo admin`
// flags provisioning passes, and the webhook headers and payload fields
// the receiver reads. It reads Forgejo's source as files, never builds or
// imports it, and is a separate module so the product's go.mod never
// depends on it.
module github.com/disinto/disinto/tools/forgejocheck

go 1.26.0

require (
	github.com/disinto/disinto v0.0.0
	github.com/rs/zerolog v1.35.1
)

require (
	code.gitea.io/sdk/gitea v0.25.1 // indirect
	filippo.io/age v1.3.1 // indirect
	filippo.io/hpke v0.4.0 // indirect
	github.com/42wim/httpsig v1.2.4 // indirect
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/davidmz/go-pageant v1.0.2 // indirect
	github.com/go-fed/httpsig v1.1.0 // indirect
	github.com/hashicorp/go-version v1.9.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)

replace github.com/disinto/disinto => ../..

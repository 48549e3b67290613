package daemon

import (
	"github.com/rs/zerolog"

	"github.com/disinto/disinto/lib/agent"
	"github.com/disinto/disinto/lib/config"
	"github.com/disinto/disinto/lib/datadir"
)

// OpenEnablement is the one way to the paused agents of the data dir l:
// the commands, status, the daemon and the supervisor all read and write
// the same file.
func OpenEnablement(l datadir.Layout) *agent.Enablement {
	return agent.NewEnablement(l.Enablement(), nil)
}

// VaultUser is the vault bot's login, which names its ops checkout; empty
// when there is none (then the vault parts refuse to be made).
func VaultUser(cfg *config.Config) string {
	b, err := cfg.Bot(config.RoleVault)
	if err != nil {
		return ""
	}
	return b.User
}

// MigrateDataDir brings the data dir l to this version's layout (see
// datadir.Layout.Migrate); call it with the data dir's lock held.
func MigrateDataDir(l datadir.Layout, cfg *config.Config) ([]datadir.Move, error) {
	owners := make([]datadir.Owners, 0, len(cfg.Projects))
	for _, p := range cfg.Projects {
		o := datadir.Owners{Project: p.Name, OpsRepo: p.OpsRepo, VaultBot: VaultUser(cfg)}
		if b, err := cfg.Bot(config.RoleDev); err == nil {
			o.DevBot = b.User
		}
		owners = append(owners, o)
	}
	return l.Migrate(owners)
}

// LogMoves says what MigrateDataDir changed.
func LogMoves(log zerolog.Logger, moves []datadir.Move) {
	for _, m := range moves {
		if m.To == "" {
			log.Info().Str("path", m.From).Msg("data dir: older ops checkout discarded (rebuilt from the forge on use)")
			continue
		}
		log.Info().Str("from", m.From).Str("to", m.To).Msg("data dir: ops checkout moved to this version's layout")
	}
}

package doctor

import (
	"fmt"
	"os"
	"strings"

	"github.com/disinto/disinto/lib/config"
)

// CheckSealedEnv names the findings about the encrypted env file and the
// credentials that belong in the secret store, not in the env files.
const CheckSealedEnv = "sealed-env"

// checkSealedEnv reports how the encrypted env file was read, warns of
// the plain env file's keys it shadows (the encrypted value wins; the
// plain one is a leftover to delete) and of mirror credentials still in
// the configuration, which only the vault may hold.
func checkSealedEnv(r *Report, o Options, cfg *config.Config) {
	enc := config.EncryptedEnvFile(o.EnvFile)
	if _, err := os.Stat(enc); err == nil {
		r.add(CheckSealedEnv, enc, OK, "decrypted with the age identity under the data dir; it wins over "+o.EnvFile, "")
	}
	for _, k := range cfg.Env.Shadowed() {
		r.add(CheckSealedEnv, k, Warning, fmt.Sprintf("set in %s and, with another value, in %s, whose value is used", o.EnvFile, enc),
			"delete "+k+" from "+o.EnvFile)
	}
	checkMirrorCredentials(r, o, cfg)
}

// checkMirrorCredentials warns of every mirror credential the daemon's
// own configuration still holds: a token in a mirror URL, or
// MIRROR_<NAME>_TOKEN in an env file. Mirror pushes run in the vault,
// which reads the credential from the secret store; one in the
// configuration reaches every agent's process for nothing.
func checkMirrorCredentials(r *Report, o Options, cfg *config.Config) {
	for _, p := range cfg.Projects {
		for name, url := range p.Mirrors {
			secret := config.MirrorSecretName(name)
			if config.MirrorURLHasCredential(url) {
				r.add(CheckSealedEnv, p.Name+"/mirrors."+name, Warning,
					"the mirror URL carries a credential, which the vault no longer uses (it pushes with the secret "+secret+")",
					"disinto secrets set "+secret+" (the token), then remove it from the URL in "+p.File)
			}
			if v, ok := cfg.Env.Lookup(secret); ok && v != "" {
				r.add(CheckSealedEnv, secret, Warning,
					"a mirror credential in the environment or an env file, where every agent could read it",
					"disinto secrets set "+secret+" (the token), then delete "+secret+" from "+strings.Join([]string{o.EnvFile, config.EncryptedEnvFile(o.EnvFile)}, " / "))
			}
		}
	}
}

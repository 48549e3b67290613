package security

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	// passwordFlag is a forge CLI password given on the command line.
	passwordFlag = regexp.MustCompile(`(^|[\s"'\[,])(--password|--passwd)([\s=",\]]|$)|\buser change-password\b`)
	// secretRef is a shell or compose reference to a secret variable.
	secretRef = regexp.MustCompile(`\$\$?\{?[A-Z0-9_]*(PASS|PASSWORD|TOKEN|SECRET|API_KEY)\b`)
	// envLine assigns one variable of a service's environment.
	envLine = regexp.MustCompile(`^\s*-?\s*[A-Z][A-Z0-9_]*\s*[:=]`)
)

// TestComposeKeepsPasswordsOutOfCommandLines: the command line of every
// process in the stack is readable by every user of the host (ps, /proc),
// so no compose service or test entrypoint may hand a password to the
// forge's CLI or expand a secret variable into a command; secrets travel
// in environment entries only.
func TestComposeKeepsPasswordsOutOfCommandLines(t *testing.T) {
	files := []string{"../../docker-compose.yml"}
	for _, pat := range []string{"../../docker/test/*.yml", "../../docker/test/*.sh"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			code := strings.TrimSpace(line)
			if strings.HasPrefix(code, "#") {
				continue
			}
			where := filepath.Base(f) + ":" + strconv.Itoa(i+1)
			if passwordFlag.MatchString(code) {
				t.Errorf("%s: a password on a command line: %s", where, code)
			}
			if secretRef.MatchString(code) && !envLine.MatchString(code) {
				t.Errorf("%s: a secret expanded outside an environment entry: %s", where, code)
			}
		}
	}
}

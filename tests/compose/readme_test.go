package compose_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// composeCmdRe matches a `docker compose run|exec` command of the README,
// up to the end of its code span, block line or comment.
var composeCmdRe = regexp.MustCompile("docker compose (run|exec) ([^`#\n]*)")

// TestReadmeComposeCommands: the README's `docker compose run` and `exec`
// commands fit the product file: the service exists, exec names the
// program to run (it bypasses the entrypoint), and run on a service of the
// agents image gives the entrypoint its arguments (the entrypoint runs
// disinto with them: `run agents disinto doctor` would run "disinto
// disinto doctor"). The preflight advice covers a container that cannot
// start: the doctor in a container of its own, and the provision log.
func TestReadmeComposeCommands(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	_, env := composeEnv(t, root)
	agentsImage := map[string]bool{"agents": true, "agents-llama": true, "provision": true, "chat": true}
	for _, m := range composeCmdRe.FindAllStringSubmatch(readme, -1) {
		verb, args := m[1], strings.Fields(m[2])
		var rest []string
		entrypoint := false
		for i := 0; i < len(args); i++ {
			switch a := args[i]; {
			case a == "--entrypoint":
				entrypoint = true
				i++
			case strings.HasPrefix(a, "-"):
			default:
				rest = args[i:]
				i = len(args)
			}
		}
		if len(rest) == 0 {
			continue // a command cut by a line break: the words around it are prose
		}
		svc, cmd := rest[0], rest[1:]
		if _, ok := env[svc]; !ok {
			t.Errorf("README: %q: no service %s in docker-compose.yml", m[0], svc)
			continue
		}
		switch {
		case verb == "exec" && len(cmd) > 0 && cmd[0] != "disinto" && cmd[0] != "claude":
			t.Errorf("README: %q: exec runs a program; name disinto or claude", m[0])
		case verb == "run" && agentsImage[svc] && !entrypoint && len(cmd) > 0 && cmd[0] == "disinto":
			t.Errorf("README: %q: the entrypoint runs disinto already; give it the command alone", m[0])
		}
	}
	for _, want := range []string{"docker compose run --rm --no-deps agents doctor", "docker compose logs provision"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README does not say %q", want)
		}
	}
}

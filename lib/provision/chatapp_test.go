package provision_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/forge/forgetest"
	"github.com/disinto/disinto/lib/provision"
)

// TestChatOAuth2App: init makes the chat's OAuth2 application with the
// edge's callback and stores its credentials; a re-run changes nothing;
// a lost secret is replaced by a new one.
func TestChatOAuth2App(t *testing.T) {
	t.Parallel()
	srv := forgetest.StartWith(t, forgetest.Options{OAuth2: true})
	dir := t.TempDir()
	opts := options(srv, dir, "acme/chatty")
	opts.ChatURL = "https://factory.example.org/"
	rep := mustRun(t, opts)
	if it, ok := rep.Find("oauth2 app", provision.ChatAppName); !ok || it.Status != provision.StatusCreated {
		t.Fatalf("oauth2 app: %+v", it)
	}
	env := readEnv(t, opts.EnvFile)
	id, secret := env[provision.ChatClientIDEnv], env[provision.ChatClientSecretEnv]
	if id == "" || secret == "" {
		t.Fatalf("env file lacks the client id or secret: %v", env)
	}
	apps, err := srv.Admin(t).ListOAuth2Apps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, a := range apps {
		if a.Name == provision.ChatAppName {
			found = true
			if a.ClientID != id || !a.Confidential || strings.Join(a.RedirectURIs, ",") != "https://factory.example.org/chat/oauth/callback" {
				t.Errorf("application %+v", a)
			}
		}
	}
	if !found {
		t.Fatal("no application on the forge")
	}
	if c := changes(mustRun(t, opts)); len(c) > 0 {
		t.Errorf("re-run changed: %v", c)
	}
	data, _ := os.ReadFile(opts.EnvFile)
	lines := []string{}
	for l := range strings.SplitSeq(string(data), "\n") {
		if !strings.HasPrefix(l, provision.ChatClientSecretEnv+"=") {
			lines = append(lines, l)
		}
	}
	if err := os.WriteFile(opts.EnvFile, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	rep = mustRun(t, opts)
	if it, ok := rep.Find("oauth2 app", provision.ChatAppName); !ok || it.Status != provision.StatusUpdated {
		t.Fatalf("after losing the secret: %+v", it)
	}
	env = readEnv(t, opts.EnvFile)
	if env[provision.ChatClientIDEnv] != id || env[provision.ChatClientSecretEnv] == "" || env[provision.ChatClientSecretEnv] == secret {
		t.Errorf("after the repair: id %q (was %q), secret renewed: %v", env[provision.ChatClientIDEnv], id, env[provision.ChatClientSecretEnv] != secret)
	}
}

package git

import (
	"slices"
	"strings"
	"testing"
)

func TestBaseEnv(t *testing.T) {
	t.Parallel()
	inherited := []string{
		"PATH=/usr/bin", "HOME=/home/agent", "LC_ALL=de_DE.UTF-8", "FORGE_TOKEN=tok",
		"ANTHROPIC_API_KEY=key", "GIT_TRACE_PACKET=1", "GIT_SSL_NO_VERIFY=1",
		"GIT_DIR=/elsewhere/.git", "GIT_WORK_TREE=/elsewhere", "GIT_INDEX_FILE=/x",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_ASKPASS=/bin/ask",
		"SSH_ASKPASS=/bin/ask", EnvPassword + "=leaked",
		"GIT_SSH_COMMAND=ssh -i key", "GIT_CONFIG_GLOBAL=/etc/agent.gitconfig",
	}
	env := baseEnv(inherited, []string{"EXTRA=1"})
	for _, want := range []string{"PATH=/usr/bin", "HOME=/home/agent", "GIT_SSH_COMMAND=ssh -i key",
		"GIT_CONFIG_GLOBAL=/etc/agent.gitconfig", "GIT_TRACE_PACKET=1", "GIT_SSL_NO_VERIFY=1", "EXTRA=1", "LC_ALL=C", "GIT_TERMINAL_PROMPT=0"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %q: %v", want, env)
		}
	}
	for _, kv := range env {
		for _, gone := range []string{"GIT_DIR=", "GIT_WORK_TREE=", "GIT_INDEX_FILE=", "GIT_CONFIG_COUNT=",
			"GIT_CONFIG_KEY_0=", "GIT_ASKPASS=", "SSH_ASKPASS=", EnvPassword + "=", "LC_ALL=de",
			"FORGE_TOKEN=", "ANTHROPIC_API_KEY="} {
			if strings.HasPrefix(kv, gone) {
				t.Errorf("env keeps %q", kv)
			}
		}
	}
}

func TestCredentialsEnv(t *testing.T) {
	t.Parallel()
	c := &Credentials{URL: "http://forge:3000/some/path", Username: "dev-bot", Password: "pw"}
	env := strings.Join(processEnv(c), "\n")
	for _, want := range []string{
		"GIT_CONFIG_COUNT=4",
		"GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=/dev/null",
		"GIT_CONFIG_KEY_2=credential.helper", "GIT_CONFIG_VALUE_2=\n",
		"GIT_CONFIG_KEY_3=credential.http://forge:3000.helper",
		EnvUser + "=dev-bot", EnvPassword + "=pw",
	} {
		if !strings.Contains(env+"\n", want) {
			t.Errorf("credentials env lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(strings.ReplaceAll(env, EnvPassword+"=pw", ""), "=pw") {
		t.Errorf("password appears outside %s:\n%s", EnvPassword, env)
	}
	for _, c := range []*Credentials{nil, {URL: "not a url", Password: "pw"}} {
		env := strings.Join(processEnv(c), "\n")
		if !strings.Contains(env, "GIT_CONFIG_COUNT=2\n") || strings.Contains(env, EnvPassword) {
			t.Errorf("processEnv(%v) = %s, want the hardening only", c, env)
		}
	}
}

package doctor

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/disinto/disinto/lib/config"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in           string
		major, minor int
		ok           bool
	}{
		{"1.26.0", 1, 26, true},
		{"1.21.11-1", 1, 21, true},
		{"11.0.1+gitea-1.22.0", 1, 22, true},
		{"v1.20.0+dev-12-gabc", 1, 20, true},
		{"development", 0, 0, false},
	} {
		major, minor, ok := parseVersion(tc.in)
		if major != tc.major || minor != tc.minor || ok != tc.ok {
			t.Errorf("parseVersion(%q) = %d.%d %v", tc.in, major, minor, ok)
		}
	}
}

func TestStatusListener(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want Status
	}{
		{nil, OK},
		{map[string]string{envStatusListen: "localhost:8081"}, OK},
		{map[string]string{envStatusListen: ":8081"}, Blocking},
		{map[string]string{envStatusListen: "0.0.0.0:8081", envStatusToken: "0123456789abcdef"}, OK},
		{map[string]string{envStatusToken: "short"}, Blocking},
	} {
		r := &Report{}
		checkStatusListener(r, config.NewEnv(tc.env))
		if len(r.Findings) != 1 || r.Findings[0].Status != tc.want {
			t.Errorf("%v: %+v, want %s", tc.env, r.Findings, tc.want)
		}
	}
}

// TestModelThroughSharedGateway: a replica of a shared gateway holds no
// model credential, and needs none.
func TestModelThroughSharedGateway(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want Status
	}{
		{map[string]string{"HOME": t.TempDir()}, Blocking},
		{map[string]string{"HOME": t.TempDir(), "DISINTO_GATEWAY_URL": "http://gateway:8090"}, OK},
	} {
		r := &Report{}
		checkModel(r, config.NewEnv(tc.env))
		if len(r.Findings) != 1 || r.Findings[0].Status != tc.want {
			t.Errorf("%v: %+v, want %s", tc.env, r.Findings, tc.want)
		}
	}
}

func TestPlaceholders(t *testing.T) {
	r := &Report{}
	checkPlaceholders(r, config.NewEnv(map[string]string{
		"FORGE_ADMIN_PASS": "change-me-before-first-start", "ANTHROPIC_API_KEY": "sk-ant-...",
		"FORGE_TOKEN": "a-real-token", "PROJECT_REPO": "change-me/repo",
	}))
	var got []string
	for _, f := range r.Findings {
		if f.Status == Blocking {
			got = append(got, f.Subject)
		}
	}
	if strings.Join(got, ",") != "ANTHROPIC_API_KEY,FORGE_ADMIN_PASS" {
		t.Errorf("placeholders found: %v", got)
	}
}

func TestDataDirFreeSpace(t *testing.T) {
	r := &Report{}
	checkDataDir(r, Options{DataDir: t.TempDir(), MinFree: 1 << 62})
	if len(r.Findings) != 1 || r.Findings[0].Status != Blocking || !strings.Contains(r.Findings[0].Message, "free, need") {
		t.Errorf("%+v", r.Findings)
	}
}

func TestClaudeVersionFails(t *testing.T) {
	r := &Report{}
	run := func(context.Context, string, ...string) (string, error) { return "boom\n", errors.New("exit status 1") }
	checkClaude(context.Background(), r, Options{RunClaude: run}, "")
	if len(r.Findings) != 1 || r.Findings[0].Status != Blocking || !strings.Contains(r.Findings[0].String(), "claude --version` failed: exit status 1: boom; fix:") {
		t.Errorf("%+v", r.Findings)
	}
}

func TestJSONListsAreNeverNull(t *testing.T) {
	var b bytes.Buffer
	if err := (&Report{}).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"findings": []`) {
		t.Errorf("%s", b.String())
	}
}

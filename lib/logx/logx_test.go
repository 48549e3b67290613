package logx_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/disinto/disinto/lib/logx"
	"github.com/disinto/disinto/lib/redact"
)

// TestNoSecretInLogs logs a configured token in every way a caller could
// (message, string field, error, nested) and checks neither sink holds it.
func TestNoSecretInLogs(t *testing.T) {
	const token = "f0rge-t0ken-0123456789"
	const password = "bot-passw0rd!"
	dir := t.TempDir()
	var console bytes.Buffer
	set, err := logx.New(logx.Options{Console: &console, NoColor: true, Dir: dir, Redactor: redact.New(token, password)})
	if err != nil {
		t.Fatal(err)
	}
	log := set.For("dev")
	log.Info().Str("token", token).Msg("using " + token)
	log.Error().Err(errors.New("push to http://dev-bot:" + password + "@forge/x.git failed")).Msg("push")
	log.Warn().Interface("cfg", map[string]string{"FORGE_TOKEN": token}).Msg("config")
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(dir, "dev.log"))
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"console": console.String(), "file": string(file)} {
		if strings.Contains(out, token) || strings.Contains(out, password) {
			t.Errorf("%s log holds a secret:\n%s", name, out)
		}
		if !strings.Contains(out, redact.Mask) {
			t.Errorf("%s log shows no mask:\n%s", name, out)
		}
	}
	// The file is JSON lines with the agent key.
	for _, line := range strings.Split(strings.TrimSpace(string(file)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		if m[logx.KeyAgent] != "dev" {
			t.Errorf("agent key missing: %q", line)
		}
	}
}

// TestEscapedSecretInLogs logs secrets holding ", \ and %, which zerolog
// writes escaped to the file and the console writer prints unescaped or
// quoted: no form of them reaches either sink.
func TestEscapedSecretInLogs(t *testing.T) {
	secrets := []string{`quo"te-t0ken`, `back\slash-t0ken`, `per%cent t0ken`}
	for _, jsonConsole := range []bool{false, true} {
		dir := t.TempDir()
		var console bytes.Buffer
		set, err := logx.New(logx.Options{Console: &console, NoColor: true, JSONConsole: jsonConsole, Dir: dir, Redactor: redact.New(secrets...)})
		if err != nil {
			t.Fatal(err)
		}
		log := set.For("dev")
		for _, s := range secrets {
			log.Info().Str("token", s).Msg("using " + s)
			log.Error().Err(errors.New("GET /user?token=" + url.QueryEscape(s) + ": rejected")).Msg("tick")
			log.Warn().Interface("cfg", map[string]string{"FORGE_TOKEN": s}).Msg("config")
		}
		if err := set.Close(); err != nil {
			t.Fatal(err)
		}
		file, err := os.ReadFile(filepath.Join(dir, "dev.log"))
		if err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string]string{"console": console.String(), "file": string(file)} {
			if strings.Contains(out, "t0ken") {
				t.Errorf("%s log (JSON console %t) holds a secret:\n%s", name, jsonConsole, out)
			}
		}
	}
}

func TestPerAgentFiles(t *testing.T) {
	dir := t.TempDir()
	set, err := logx.New(logx.Options{Console: &bytes.Buffer{}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"review", "../escape"} {
		l := set.For(agent)
		l.Info().Msg("line")
	}
	dev := set.For("dev")
	dev.Debug().Msg("hidden at info level")
	set.Close()
	for _, name := range []string{"review.log", "misc.log"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "dev.log")); err == nil {
		if b, _ := os.ReadFile(filepath.Join(dir, "dev.log")); strings.Contains(string(b), "hidden") {
			t.Error("debug line written at info level")
		}
	}
}

// TestNoColorOffTerminal: output captured by `docker compose logs` or a
// file carries no ANSI escapes.
func TestNoColorOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	set, err := logx.New(logx.Options{Console: &buf})
	if err != nil {
		t.Fatal(err)
	}
	l := set.For("dev")
	l.Info().Str("k", "v").Msg("hello")
	if strings.Contains(buf.String(), "\x1b[") {
		t.Errorf("colour codes in non-terminal output: %q", buf.String())
	}
}

// The level and the console format come from the options: warn drops info
// lines from both sinks, a JSON console gets one object a line with a
// millisecond time, and an unknown level is refused.
func TestLevelAndJSONConsole(t *testing.T) {
	dir := t.TempDir()
	var console bytes.Buffer
	set, err := logx.New(logx.Options{Console: &console, JSONConsole: true, Dir: dir, Level: "warn"})
	if err != nil {
		t.Fatal(err)
	}
	log := set.For("dev")
	log.Info().Msg("quiet")
	log.Warn().Msg("loud")
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join(dir, "dev.log"))
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"console": console.String(), "file": string(file)} {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "loud") {
			t.Fatalf("%s holds %q, want the warn line only", name, out)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
			t.Fatalf("%s line %q is not JSON: %v", name, lines[0], err)
		}
		at, _ := m["time"].(string)
		if _, err := time.Parse(logx.TimeFormat, at); err != nil {
			t.Errorf("%s time %q is not RFC 3339 with milliseconds: %v", name, at, err)
		}
	}
	if _, err := logx.New(logx.Options{Level: "loud"}); err == nil || !strings.Contains(err.Error(), `"loud"`) {
		t.Errorf("an unknown level: %v, want an error naming it", err)
	}
	if _, err := logx.ParseFormat("xml"); err == nil {
		t.Error("format xml accepted")
	}
}

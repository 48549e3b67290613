package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLIIn runs the CLI in-process with stdin.
func runCLIIn(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.ExecuteContext(context.Background())
	var ue usageError
	switch {
	case err == nil:
		code = exitOK
	case errors.As(err, &ue):
		code = exitUsage
	default:
		code = exitFailure
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}

// assertNowhere fails t when value is in any file under dir or in any of
// texts.
func assertNowhere(t *testing.T, value, dir string, texts ...string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, rerr := os.ReadFile(p); rerr == nil && bytes.Contains(b, []byte(value)) {
				t.Errorf("%s holds the secret in clear", p)
			}
		}
		return nil
	})
	for i, s := range texts {
		if strings.Contains(s, value) {
			t.Errorf("output %d holds the secret: %q", i, s)
		}
	}
}

// TestSecretsCLI: set reads stdin and drops one newline, get prints the
// value, list names it, nothing on disk or in the output of set, list, rm
// holds it in clear; overwriting needs --force; a bad name writes
// nothing (spec 70 §8.7 scenarios 1–3).
func TestSecretsCLI(t *testing.T) {
	data := t.TempDir()
	const value = "s3cr3t-9d2b71-value"
	dd := "--data-dir=" + data
	code, out, errOut := runCLIIn(t, value+"\n", "secrets", "set", "FOO", dd)
	if code != exitOK {
		t.Fatalf("set: %d %s %s", code, out, errOut)
	}
	logs := out + errOut
	code, out, errOut = runCLIIn(t, "", "secrets", "get", "FOO", dd)
	if code != exitOK || out != value {
		t.Fatalf("get: %d %q %s", code, out, errOut)
	}
	code, out, errOut = runCLIIn(t, "", "secrets", "list", dd)
	if code != exitOK || out != "FOO\n" {
		t.Fatalf("list: %d %q %s", code, out, errOut)
	}
	logs += out + errOut
	if code, _, _ := runCLIIn(t, "other\n", "secrets", "set", "FOO", dd); code != exitFailure {
		t.Fatalf("overwrite without --force: %d", code)
	}
	if _, out, _ := runCLIIn(t, "", "secrets", "get", "FOO", dd); out != value {
		t.Fatalf("value changed to %q", out)
	}
	if code, _, _ := runCLIIn(t, "x\n", "secrets", "set", "../evil", dd); code != exitUsage {
		t.Fatalf("bad name: %d", code)
	}
	if _, err := os.Stat(filepath.Join(data, "evil.enc")); err == nil {
		t.Fatal("a file outside secrets/ was written")
	}
	code, out, errOut = runCLIIn(t, "", "secrets", "rotate", dd, "--env-file="+filepath.Join(data, "none.env"))
	if code != exitOK {
		t.Fatalf("rotate: %d %s %s", code, out, errOut)
	}
	logs += out + errOut
	if _, out, _ := runCLIIn(t, "", "secrets", "get", "FOO", dd); out != value {
		t.Fatalf("after rotate %q", out)
	}
	assertNowhere(t, value, data, logs)
	code, out, errOut = runCLIIn(t, "", "secrets", "rm", "FOO", dd)
	if code != exitOK {
		t.Fatalf("rm: %d %s %s", code, out, errOut)
	}
	if code, _, _ := runCLIIn(t, "", "secrets", "get", "FOO", dd); code != exitFailure {
		t.Fatalf("get after rm: %d", code)
	}
}

// TestSecretsEnvFile: env-encrypt replaces the plain env file with an
// encrypted one, and env-import stores each line as a secret without
// evaluating anything (§8.7 scenarios 5 and 6).
func TestSecretsEnvFile(t *testing.T) {
	data := t.TempDir()
	env := filepath.Join(data, "config", ".env")
	writeFile(t, env, "GITHUB_TOKEN=gh-4e1a-token\nCODEBERG_TOKEN=\"cb-77 token\"\n")
	flags := []string{"--data-dir=" + data, "--env-file=" + env}
	code, out, errOut := runCLIIn(t, "", append([]string{"secrets", "env-encrypt"}, flags...)...)
	if code != exitOK {
		t.Fatalf("env-encrypt: %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(env); err == nil {
		t.Fatal("the plain env file is still there")
	}
	code, out, errOut = runCLIIn(t, "", append([]string{"secrets", "env-import"}, flags...)...)
	if code != exitOK {
		t.Fatalf("env-import: %d %s %s", code, out, errOut)
	}
	for name, want := range map[string]string{"GITHUB_TOKEN": "gh-4e1a-token", "CODEBERG_TOKEN": "cb-77 token"} {
		if _, got, _ := runCLIIn(t, "", append([]string{"secrets", "get", name}, flags...)...); got != want {
			t.Errorf("%s = %q", name, got)
		}
	}
	assertNowhere(t, "gh-4e1a-token", data, out, errOut)
	bad := filepath.Join(data, "bad.env")
	writeFile(t, bad, "A=1\n$(touch "+filepath.Join(data, "pwned")+")\n")
	if code, _, _ := runCLIIn(t, "", append([]string{"secrets", "env-import", bad}, flags...)...); code != exitFailure {
		t.Fatalf("a line that is not KEY=VALUE: %d", code)
	}
	if _, err := os.Stat(filepath.Join(data, "pwned")); err == nil {
		t.Fatal("the line was evaluated")
	}
	if code, _, _ := runCLIIn(t, "", append([]string{"secrets", "get", "A"}, flags...)...); code != exitFailure {
		t.Fatal("a partly bad file stored some of its lines")
	}
}

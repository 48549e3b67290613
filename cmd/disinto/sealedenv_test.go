package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigCheckReadsEncryptedEnv: after env-encrypt, config check (the
// offline doctor) reads the encrypted env file with the data dir's key:
// a placeholder sealed in it is found, a plain leftover of another value
// is a warning, and a key that does not open it is one blocking line
// naming the file.
func TestConfigCheckReadsEncryptedEnv(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	env := filepath.Join(dir, "config", ".env")
	writeFile(t, filepath.Join(dir, "projects", "a.toml"), "name = \"a\"\nrepo = \"o/a\"\n")
	writeFile(t, env, "FORGE_TOKEN=change-me-before-first-start\nFORGE_REVIEW_TOKEN=sealed-review-3c9e1f\n")
	flags := []string{"--data-dir=" + data, "--env-file=" + env, "--projects-dir=" + filepath.Join(dir, "projects")}
	if code, out, errOut := runCLIIn(t, "", append([]string{"secrets", "env-encrypt"}, flags...)...); code != exitOK {
		t.Fatalf("env-encrypt: %d %s %s", code, out, errOut)
	}
	// A plain file again, whose token differs from the sealed one.
	writeFile(t, env, "FORGE_REVIEW_TOKEN=plain-leftover-77aa\n")
	code, out, errOut := runCLIIn(t, "", append([]string{"config", "check"}, flags...)...)
	if code != exitFailure || !strings.Contains(out, "BLOCKING placeholder FORGE_TOKEN") {
		t.Fatalf("the sealed placeholder was not read: %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "WARNING  sealed-env FORGE_REVIEW_TOKEN") || !strings.Contains(out, "OK       sealed-env "+env+".enc") {
		t.Fatalf("no shadowing warning:\n%s", out)
	}
	if strings.Contains(out+errOut, "sealed-review-3c9e1f") {
		t.Fatal("a sealed value was printed")
	}
	// Another identity cannot open it: one line naming the file.
	if err := os.Remove(filepath.Join(data, "keys", "age.txt")); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := runCLIIn(t, "x\n", append([]string{"secrets", "set", "OTHER"}, flags...)...); code != exitOK {
		t.Fatal("secrets set")
	}
	code, out, errOut = runCLIIn(t, "", append([]string{"config", "check"}, flags...)...)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, ".env.enc") {
			lines = append(lines, l)
		}
	}
	if code != exitFailure || len(lines) != 1 || !strings.Contains(lines[0], "BLOCKING") || !strings.Contains(lines[0], "cannot decrypt") || !strings.Contains(lines[0], "wrong key") {
		t.Fatalf("wrong key: %d %q\n%s%s", code, lines, out, errOut)
	}
}

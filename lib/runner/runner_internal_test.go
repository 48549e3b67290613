package runner

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/disinto/disinto/lib/redact"
)

// TestContainerHoldsNoSecret: the secrets reach the container only through
// its stdin; its configuration, as the engine receives and shows it,
// holds no value.
func TestContainerHoldsNoSecret(t *testing.T) {
	r, err := New(Options{Engine: nopEngine{}})
	if err != nil {
		t.Fatal(err)
	}
	const value = `tok"en-\value-1234`
	j := Job{ID: "a1", Kind: Mechanical, Script: "true", Secrets: map[string]string{"GITHUB_TOKEN": value},
		Timeout: r.timeout, Limits: r.limits}
	opts := r.createOptions(j, "n")
	data, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, form := range []string{value, `tok\"en-\\value-1234`, "en-", "1234"} {
		if strings.Contains(string(data), form) {
			t.Errorf("the container's configuration holds %q:\n%s", form, data)
		}
	}
	hc := opts.HostConfig
	if hc.NetworkMode != "none" || !hc.ReadonlyRootfs || hc.Privileged || len(hc.Binds) != 0 || len(hc.Mounts) != 0 {
		t.Errorf("host config %+v", hc)
	}
	if opts.Config.User != "1000:1000" || !opts.Config.StdinOnce || opts.Config.Tty {
		t.Errorf("config %+v", opts.Config)
	}
}

// TestReasoningCommand: a reasoning job pipes its prompt into the image's
// claude with the factory's isolation flags and a turn limit; its model
// key stays out of the configuration like every secret.
func TestReasoningCommand(t *testing.T) {
	r, err := New(Options{Engine: nopEngine{}})
	if err != nil {
		t.Fatal(err)
	}
	const key = "sk-ant-model-key-0123456789"
	j := Job{ID: "r1", Kind: Reasoning, Script: "## Formula\nrelease", Model: "claude-test",
		Secrets: map[string]string{"ANTHROPIC_API_KEY": key}, Timeout: r.timeout, Limits: r.limits}
	if err := j.validate(); err != nil {
		t.Fatal(err)
	}
	opts := r.createOptions(j, "n")
	cmd := strings.Join(opts.Config.Cmd, " ")
	for _, want := range []string{"## Formula\nrelease claude -p ", "--max-turns 30", "--setting-sources=", "--strict-mcp-config", "--model claude-test", "--output-format stream-json"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command %q lacks %q", cmd, want)
		}
	}
	if !strings.Contains(opts.Config.Entrypoint[2], "ANTHROPIC_API_KEY") {
		t.Errorf("the bootstrap does not export the model key: %s", opts.Config.Entrypoint[2])
	}
	data, _ := json.Marshal(opts)
	if strings.Contains(string(data), key) || strings.Contains(string(data), "0123456789") {
		t.Errorf("the configuration holds the model key:\n%s", data)
	}
}

// TestSecretsArchive: one 0400 file per secret, owned by the container
// user, holding exactly the value.
func TestSecretsArchive(t *testing.T) {
	data, err := secretsArchive(map[string]string{"B_TOKEN": "bbbbbbbb\n", "A_TOKEN": "aaaaaaa"}, 1000, 1001)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(data))
	var got []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if hdr.Mode != 0o400 || hdr.Uid != 1000 || hdr.Gid != 1001 || hdr.Typeflag != tar.TypeReg {
			t.Errorf("%s: mode %o uid %d gid %d type %c", hdr.Name, hdr.Mode, hdr.Uid, hdr.Gid, hdr.Typeflag)
		}
		got = append(got, hdr.Name+"="+string(body))
	}
	if want := "A_TOKEN=aaaaaaa,B_TOKEN=bbbbbbbb\n"; strings.Join(got, ",") != want {
		t.Errorf("archive holds %q, want %q", strings.Join(got, ","), want)
	}
}

func TestLogTail(t *testing.T) {
	const secret = "s3cret-value-0123456789"
	red := redact.New(secret)
	secrets := map[string]string{"T": secret}
	t.Run("secret split across writes", func(t *testing.T) {
		tail := newLogTail(1024, secrets)
		for _, chunk := range []string{"before s3cret-", "value-0123", "456789 after\n"} {
			_, _ = tail.Write([]byte(chunk))
		}
		got, n := tail.text(red)
		if got != "before "+redact.Mask+" after\n" || n != int64(len("before s3cret-value-0123456789 after\n")) {
			t.Errorf("got %q (%d bytes)", got, n)
		}
	})
	t.Run("cut inside a secret", func(t *testing.T) {
		// Every cut position: the kept front may start anywhere inside a
		// secret, and no part of it may show.
		for pad := range len(secret) + 40 {
			tail := newLogTail(64, secrets)
			_, _ = tail.Write([]byte(strings.Repeat("x", 500) + secret + strings.Repeat("y", pad)))
			_, _ = tail.Write([]byte(strings.Repeat("z", 20) + secret + "\nend\n"))
			got, n := tail.text(red)
			if len(got) > 64 {
				t.Fatalf("pad %d: %d bytes, limit 64", pad, len(got))
			}
			for i := 6; i <= len(secret); i++ {
				if strings.Contains(got, secret[len(secret)-i:]) || strings.Contains(got, secret[:i]) {
					t.Fatalf("pad %d: part %q of the secret shows in %q", pad, secret[len(secret)-i:], got)
				}
			}
			if !strings.HasSuffix(got, redact.Mask+"\nend\n") || n <= int64(len(got)) {
				t.Fatalf("pad %d: tail %q (%d written)", pad, got, n)
			}
		}
	})
	t.Run("cut inside an escaped secret", func(t *testing.T) {
		// JSON escapes this secret to six times its length and the mask is
		// short: masking shrinks the kept text below the limit, so the cut
		// front would show unless it is dropped.
		const ctl = "\x01\x02\x03\x04\x05\x06\x07\x0e"
		form := `\u0001\u0002\u0003\u0004\u0005\u0006\u0007\u000e`
		red := redact.New(ctl)
		for pad := range len(form) {
			tail := newLogTail(1024, map[string]string{"C": ctl})
			_, _ = tail.Write([]byte(strings.Repeat(form, 100) + strings.Repeat("x", pad)))
			got, _ := tail.text(red)
			// What is left besides whole masks, cut masks and the padding.
			trimmed := strings.Trim(strings.ReplaceAll(got, redact.Mask, ""), "[]REDACT")
			if strings.Trim(trimmed, "x") != "" {
				t.Fatalf("pad %d: part of the secret shows: %q", pad, trimmed)
			}
		}
	})
	t.Run("cut inside a character", func(t *testing.T) {
		tail := newLogTail(5, nil)
		_, _ = tail.Write([]byte(strings.Repeat("é", 200)))
		got, _ := tail.text(red)
		if !utf8.ValidString(got) || len(got) > 5 || got == "" {
			t.Errorf("tail %q", got)
		}
	})
}

// nopEngine is an Engine for tests that never reach it.
type nopEngine struct{ Engine }

package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Env is the merged environment: the .env file, overlaid by the encrypted
// env file, overlaid by the process environment (the process wins, so
// compose and the shell can override the files; see LoadEnvWith). It is an
// immutable value.
type Env struct {
	vals map[string]string
	// sealed marks the keys whose value came from the encrypted env file;
	// shadowed lists the plain file's keys it overrode with another value.
	sealed   map[string]bool
	shadowed []string
	// src says where each value came from (LoadEnvWith).
	src map[string]Source
}

// Source is where a value of the environment came from.
type Source string

// The sources of an Env's values, weakest first.
const (
	SourceEnvFile Source = "env file"
	SourceSealed  Source = "encrypted env file"
	SourceProcess Source = "process environment"
	// SourceGiven: an Env built by NewEnv from values already merged.
	SourceGiven Source = "given"
	SourceUnset Source = ""
)

// Source is where key's value came from; SourceUnset when it is unset.
func (e Env) Source(key string) Source {
	if _, ok := e.vals[key]; !ok {
		return SourceUnset
	}
	if s, ok := e.src[key]; ok {
		return s
	}
	return SourceGiven
}

// NewEnv builds an Env from explicit values (tests, callers that already
// merged their sources).
func NewEnv(vals map[string]string) Env {
	m := make(map[string]string, len(vals))
	for k, v := range vals {
		m[k] = v
	}
	return Env{vals: m}
}

// Get returns the value of key, or "" when unset.
func (e Env) Get(key string) string { return e.vals[key] }

// Lookup returns the value of key and whether it is set.
func (e Env) Lookup(key string) (string, bool) {
	v, ok := e.vals[key]
	return v, ok
}

// Map returns a copy of every variable.
func (e Env) Map() map[string]string {
	m := make(map[string]string, len(e.vals))
	for k, v := range e.vals {
		m[k] = v
	}
	return m
}

var secretKey = regexp.MustCompile(`(TOKEN|PASS|PASSWORD|SECRET|API_KEY|PRIVATE_KEY|_KEY)$|^(TOKEN|PASS)_|_(TOKEN|PASS)_`)

// IsSecretName reports whether a variable name holds a secret by the
// naming conventions of the reference (…_TOKEN, …_PASS, …_SECRET, …_KEY).
func IsSecretName(name string) bool { return secretKey.MatchString(name) }

// Secrets returns every non-empty value whose variable name marks it as a
// secret, for the redactor. Being in the encrypted env file does not make
// a value one: `secrets env-encrypt` seals the whole env file, and masking
// its addresses and URLs would leave logs and doctor unreadable.
func (e Env) Secrets() []string {
	var out []string
	for k, v := range e.vals {
		if v != "" && IsSecretName(k) {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ReadEnvFile parses a dotenv file: KEY=VALUE lines, optional "export "
// prefix, # comments, single or double quotes around the value. A missing
// file is not an error (the process environment may carry everything).
func ReadEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open env file: %w", err)
	}
	defer f.Close()
	return ParseEnv(path, f)
}

// ParseEnv parses dotenv content; name is used in error messages. Every
// line that is no assignment is a Problem, all of them returned together
// as Problems.
func ParseEnv(name string, r io.Reader) (map[string]string, error) {
	vals := map[string]string{}
	var bad Problems
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		text = strings.TrimPrefix(text, "export ")
		k, v, ok := strings.Cut(text, "=")
		k = strings.TrimSpace(k)
		if !ok || !envName.MatchString(k) {
			bad = append(bad, &Problem{File: name, Line: line, Msg: "expected KEY=VALUE", Err: ErrInvalid,
				Fix: fmt.Sprintf("write line %d of %s as KEY=VALUE (the name: letters, digits and _, not starting with a digit), or start it with # to make it a comment", line, name)})
			continue
		}
		v = strings.TrimSpace(v)
		if n := len(v); n >= 2 && (v[0] == '"' && v[n-1] == '"' || v[0] == '\'' && v[n-1] == '\'') {
			quote := v[0]
			v = v[1 : n-1]
			if quote == '"' {
				v = strings.NewReplacer(`\n`, "\n", `\"`, `"`, `\\`, `\`).Replace(v)
			}
		} else if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		vals[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(bad) > 0 {
		return nil, bad
	}
	return vals, nil
}

// LoadEnv merges the env file at path with the process environment given
// as KEY=VALUE pairs (os.Environ()); the process environment wins. It
// cannot decrypt: an encrypted env file next to path is a Problem
// wrapping ErrNoDecrypter (use LoadEnvWith).
func LoadEnv(path string, environ []string) (Env, error) {
	return LoadEnvWith(path, nil, environ)
}

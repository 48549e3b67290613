package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"filippo.io/age"
)

// EncryptedSuffix ends the encrypted env file: <env-file>.enc, which
// `disinto secrets env-encrypt` writes (an age-armored dotenv file).
const EncryptedSuffix = ".enc"

// EncryptedEnvFile returns the encrypted env file that goes with envFile.
func EncryptedEnvFile(envFile string) string { return envFile + EncryptedSuffix }

// Decrypter returns the plain content of an encrypted file (lib/secrets'
// Store.DecryptFile, with the age identity under the data dir). It is a
// function so that this package stays a leaf of the lib graph.
type Decrypter func(path string) ([]byte, error)

// ErrNoDecrypter: an encrypted env file is present and the caller gave
// nothing to decrypt it with.
var ErrNoDecrypter = errors.New("encrypted env file present but no age identity to decrypt it")

// LoadEnvWith merges, lowest precedence first:
//
//  1. the plain env file at path;
//  2. the encrypted env file next to it (EncryptedEnvFile(path)),
//     decrypted with dec, when it exists;
//  3. the process environment given as KEY=VALUE pairs (os.Environ()).
//
// A key both files define takes the encrypted file's value: a plain file
// left over after encryption, or one an attacker could write more easily
// than the sealed one, never shadows a sealed secret. Such keys are
// listed by Env.Shadowed, for doctor. Its values are masked as secrets
// by their names, as those of the plain file are (Env.Secrets). A file that does not decrypt or parse is one Problem naming it; a
// missing file of either kind is not an error.
func LoadEnvWith(path string, dec Decrypter, environ []string) (Env, error) {
	vals, err := ReadEnvFile(path)
	if err != nil {
		return Env{}, err
	}
	sealed, err := readSealedEnv(path, dec)
	if err != nil {
		return Env{}, err
	}
	e := Env{vals: vals, src: make(map[string]Source, len(vals))}
	for k := range vals {
		e.src[k] = SourceEnvFile
	}
	if len(sealed) > 0 {
		e.sealed = make(map[string]bool, len(sealed))
	}
	for k, v := range sealed {
		if old, ok := vals[k]; ok && old != v {
			e.shadowed = append(e.shadowed, k)
		}
		vals[k] = v
		e.sealed[k] = true
		e.src[k] = SourceSealed
	}
	sort.Strings(e.shadowed)
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if old, set := vals[k]; !set || old != v {
				delete(e.sealed, k) // the process's value is not the sealed one
				e.src[k] = SourceProcess
			}
			vals[k] = v
		}
	}
	return e, nil
}

// readSealedEnv decrypts and parses the encrypted env file of path; nil
// when there is none (or path is empty).
func readSealedEnv(path string, dec Decrypter) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	enc := EncryptedEnvFile(path)
	st, err := os.Stat(enc)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("encrypted env file: %w", err)
	case st.IsDir():
		return nil, &Problem{File: enc, Msg: "is a directory, not an encrypted env file", Err: ErrInvalid}
	case dec == nil:
		return nil, &Problem{File: enc, Msg: ErrNoDecrypter.Error(), Err: ErrNoDecrypter}
	}
	plain, err := dec(enc)
	if err != nil {
		return nil, &Problem{File: enc, Msg: "cannot decrypt: " + decryptReason(err), Err: ErrInvalid}
	}
	vals, err := ParseEnv(enc, bytes.NewReader(plain))
	if err != nil {
		return nil, err
	}
	return vals, nil
}

// decryptReason says why a file did not decrypt without quoting the
// decrypter's message, which may quote the file's content: a missing
// identity file names it, any other failure is said in general terms.
func decryptReason(err error) string {
	var pe *fs.PathError
	var nomatch *age.NoIdentityMatchError
	switch {
	case errors.As(err, &nomatch):
		return "the age identity under the data dir is not one it was encrypted to (wrong key)"
	case errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist):
		return "no age identity at " + pe.Path
	}
	return "not an age-encrypted file, or a damaged one (wrong key or corrupt file)"
}

// Sealed reports whether key's value came from the encrypted env file.
func (e Env) Sealed(key string) bool { return e.sealed[key] }

// Shadowed lists the keys the plain env file defines with another value
// than the encrypted one, which won.
func (e Env) Shadowed() []string { return append([]string(nil), e.shadowed...) }

package provision

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/disinto/disinto/lib/atomicfile"
	"github.com/disinto/disinto/lib/config"
)

// EnvFile is a dotenv file edited in place: lines that are not ours
// (comments, unknown keys) are kept verbatim, our keys are replaced where
// they stand or appended. Save writes atomically with mode 0600.
type EnvFile struct {
	path  string
	lines []string
	vals  map[string]string
	// exposed is set when the file exists with permissions for group or
	// others; the next Save replaces it with a 0600 file.
	exposed bool
}

// OpenEnvFile reads path; a missing file is an empty EnvFile.
func OpenEnvFile(path string) (*EnvFile, error) {
	e := &EnvFile{path: path, vals: map[string]string{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return e, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read env file: %w", err)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		e.exposed = true
	}
	vals, err := config.ParseEnv(path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	e.vals = vals
	text := strings.TrimSuffix(string(data), "\n")
	if text != "" {
		e.lines = strings.Split(text, "\n")
	}
	return e, nil
}

// Path returns the file's path.
func (e *EnvFile) Path() string { return e.path }

// Exposed reports whether the file on disk is readable or writable by
// group or others (it holds tokens and passwords); Save fixes that.
func (e *EnvFile) Exposed() bool { return e.exposed }

// Get returns the value of key, or "".
func (e *EnvFile) Get(key string) string { return e.vals[key] }

// Set replaces every assignment of key with one KEY=value line (at the
// first one's place) or appends it. It reports whether the value changed.
func (e *EnvFile) Set(key, value string) bool {
	old, had := e.vals[key]
	e.vals[key] = value
	line := key + "=" + quoteEnv(value)
	out := e.lines[:0:0]
	placed := false
	for _, l := range e.lines {
		if lineKey(l) == key {
			if !placed {
				out = append(out, line)
				placed = true
			}
			continue
		}
		out = append(out, l)
	}
	if !placed {
		out = append(out, line)
	}
	e.lines = out
	return !had || old != value
}

// lineKey returns the key a dotenv line assigns, or "".
func lineKey(l string) string {
	t := strings.TrimSpace(l)
	if t == "" || strings.HasPrefix(t, "#") {
		return ""
	}
	t = strings.TrimPrefix(t, "export ")
	k, _, ok := strings.Cut(t, "=")
	if !ok {
		return ""
	}
	return strings.TrimSpace(k)
}

// quoteEnv quotes values that the dotenv reader would otherwise alter.
func quoteEnv(v string) string {
	if v == "" || strings.ContainsAny(v, " \t#\"'\\\n") {
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
		return `"` + r.Replace(v) + `"`
	}
	return v
}

// Save writes the file atomically (temporary file in the same directory,
// fsync, rename) with mode 0600, creating the directory if needed.
func (e *EnvFile) Save() error {
	content := strings.Join(e.lines, "\n")
	if content != "" {
		content += "\n"
	}
	if err := atomicfile.Write(e.path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("write env file: %w", err)
	}
	e.exposed = false
	return nil
}

// Package forgejocheck checks the product against the source of one
// Forgejo version without building or running it: the API description
// (templates/swagger/v1_json.tmpl), the CLI's command tree (cmd/), the
// webhook delivery headers and the payload structs. The checks report
// Findings; a contract test in this package runs them against the product
// and fails on any finding not in allowlist.txt.
package forgejocheck

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The Forgejo version checked. The Go module proxy serves Forgejo's source
// only as pseudo-versions of its development branch (its go.mod names the
// module code.gitea.io/gitea, so no release tag resolves); this is the
// newest it serves, the forgejo branch of 2024-12-19, after v9.0.3 and
// heading for v10.0. ModuleSum pins its content (go.sum's h1: hash).
const (
	Module        = "codeberg.org/forgejo/forgejo"
	ModuleVersion = "v1.21.0-rc0.0.20241219112042-456d05998231"
	ModuleSum     = "h1:4WZLTrLFz7xwr6WOa5aLhCQ9io09GTShFM6ujs4nxtA="
	// Release names the Forgejo release line the version leads to.
	Release = "Forgejo v10.0 development branch (2024-12-19)"
)

// sourceFiles selects the files of the module the checks read.
func sourceFile(name string) bool {
	switch {
	case name == "templates/swagger/v1_json.tmpl",
		name == "services/webhook/shared/payloader.go",
		name == "modules/webhook/type.go":
		return true
	case strings.HasPrefix(name, "cmd/") || strings.HasPrefix(name, "modules/structs/"):
		return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")
	}
	return false
}

// Source returns a directory holding the files of Forgejo ModuleVersion
// the checks read, extracted once under cacheDir (e.g.
// ~/.cache/disinto/forgejo). The module is downloaded with `go mod
// download`, which verifies it against the checksum database; its hash
// must also equal ModuleSum.
func Source(cacheDir string) (string, error) {
	dir := filepath.Join(cacheDir, ModuleVersion)
	done := filepath.Join(dir, ".complete")
	if b, err := os.ReadFile(done); err == nil && string(b) == ModuleSum {
		return dir, nil
	}
	zipPath, err := download()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cacheDir, ".tmp-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := extract(zipPath, tmp); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), []byte(ModuleSum), 0o644); err != nil {
		return "", err
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("cache forgejo source: %w", err)
	}
	return dir, nil
}

// download fetches the module zip through the module proxy and returns its
// path in the module cache.
func download() (string, error) {
	work, err := os.MkdirTemp("", "forgejocheck-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(work) }()
	cmd := exec.Command("go", "mod", "download", "-json", Module+"@"+ModuleVersion)
	// Outside any module, so no go.mod constrains the download.
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GO111MODULE=on")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Zip, Sum, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil && err == nil {
		err = jerr
	}
	if info.Error != "" {
		err = errors.New(info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w: %s", Module, ModuleVersion, err, strings.TrimSpace(stderr.String()))
	}
	if info.Sum != ModuleSum {
		return "", fmt.Errorf("%s@%s: hash %s, want %s", Module, ModuleVersion, info.Sum, ModuleSum)
	}
	return info.Zip, nil
}

// extract copies the selected files of the module zip into dir.
func extract(zipPath, dir string) error {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return fmt.Errorf("open %s: %w", zipPath, err)
	}
	defer func() { _ = zr.Close() }()
	prefix := Module + "@" + ModuleVersion + "/"
	n := 0
	for _, f := range zr.File {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || !sourceFile(name) {
			continue
		}
		if err := extractFile(f, filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("%s: no file of %s", zipPath, prefix)
	}
	return nil
}

func extractFile(f *zip.File, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	r, err := f.Open()
	if err != nil {
		return fmt.Errorf("read %s: %w", f.Name, err)
	}
	defer func() { _ = r.Close() }()
	w, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		_ = w.Close()
		return fmt.Errorf("extract %s: %w", f.Name, err)
	}
	return w.Close()
}

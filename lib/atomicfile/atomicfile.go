// Package atomicfile writes files so that a reader, or a daemon restarted
// after a crash, sees either the old content or the new one, never half of
// it: write a temporary file in the same directory, fsync it, rename it over
// the target, fsync the directory. It also reads back, safely, files that
// an untrusted process may have written (ReadUntrusted).
package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Write replaces path with data, creating parent directories (0o750).
func Write(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	// The rename is durable only once the directory entry is synced.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// WriteJSON replaces path with v encoded as indented JSON.
func WriteJSON(path string, v any, perm os.FileMode) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return Write(path, append(data, '\n'), perm)
}

// ReadJSON decodes path into v. A missing file returns an error satisfying
// errors.Is(err, os.ErrNotExist).
func ReadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// ErrUnsafe means a file written by an untrusted process is not a plain
// file of bounded size.
var ErrUnsafe = errors.New("unsafe file")

// untrustedFlags open a file for reading without following a symlink in
// the last path component and without blocking on a FIFO.
const untrustedFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// ReadUntrusted reads a file that an untrusted process could have
// written or replaced: it refuses a symlink as the last path component
// (which could point at the daemon's secrets), anything but a regular
// file (a FIFO would block the reader), a file with more than one link (a
// hard link to a file its writer may not read), and more than max bytes.
// The directories above path must be the reader's, or at least not
// replaceable by the writer; ReadUntrustedIn confines a path to a
// directory. A missing file is an error wrapping fs.ErrNotExist; a
// refused one wraps ErrUnsafe.
func ReadUntrusted(path string, max int64) ([]byte, os.FileInfo, error) {
	f, fi, err := OpenUntrusted(path, max)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return readUntrusted(f, fi, path, max)
}

// ReadUntrustedIn is ReadUntrusted of name inside root: no symlink or
// ".." in name leads out of root.
func ReadUntrustedIn(root *os.Root, name string, max int64) ([]byte, os.FileInfo, error) {
	f, fi, err := OpenUntrustedIn(root, name, max)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return readUntrusted(f, fi, filepath.Join(root.Name(), name), max)
}

// OpenUntrusted opens for reading a file that an untrusted process could
// have written or replaced, checked as ReadUntrusted checks it, for a
// caller that streams it; reads past max bytes are the caller's to
// refuse (the file may grow). The caller closes the file.
func OpenUntrusted(path string, max int64) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, untrustedFlags, 0)
	return checkUntrusted(f, err, path, max)
}

// OpenUntrustedIn is OpenUntrusted of name inside root.
func OpenUntrustedIn(root *os.Root, name string, max int64) (*os.File, os.FileInfo, error) {
	f, err := root.OpenFile(name, untrustedFlags, 0)
	return checkUntrusted(f, err, filepath.Join(root.Name(), name), max)
}

// checkUntrusted vets the result of opening path: a plain file with one
// link and at most max bytes, else f is closed and the error names why.
func checkUntrusted(f *os.File, err error, path string, max int64) (*os.File, os.FileInfo, error) {
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, nil, fmt.Errorf("read %s: a symlink: %w", path, ErrUnsafe)
		}
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	why := ""
	switch st, ok := fi.Sys().(*syscall.Stat_t); {
	case !fi.Mode().IsRegular():
		why = "not a regular file"
	case !ok || uint64(st.Nlink) != 1:
		why = "a file with more than one link"
	case fi.Size() > max:
		why = fmt.Sprintf("larger than %d bytes", max)
	}
	if why != "" {
		f.Close()
		return nil, nil, fmt.Errorf("read %s: %s: %w", path, why, ErrUnsafe)
	}
	return f, fi, nil
}

// readUntrusted reads the opened file f, at most max bytes.
func readUntrusted(f *os.File, fi os.FileInfo, path string, max int64) ([]byte, os.FileInfo, error) {
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, nil, fmt.Errorf("read %s: larger than %d bytes: %w", path, max, ErrUnsafe)
	}
	return data, fi, nil
}

// ReadState reads the JSON record a process keeps at path between its own
// runs (a watermark, counters, a record of what it did). A missing file
// gives the zero value and false; so does a torn or foreign file, which
// costs its owner one run from scratch instead of a role stuck on a bad
// file. Any other read error is returned.
func ReadState[T any](path string) (T, bool, error) {
	var zero T
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return zero, false, nil
	}
	if err != nil {
		return zero, false, fmt.Errorf("read %s: %w", path, err)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return zero, false, nil
	}
	return v, true, nil
}

// WriteState replaces the JSON record at path (0600), making its
// directory (0700) first.
func WriteState(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	return WriteJSON(path, v, 0o600)
}

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

// ReadUntrusted reads a file that an untrusted process could have
// written or replaced: it refuses a symlink as the last path component
// (which could point at the daemon's secrets), anything but a regular
// file (a FIFO would block the reader), and more than max bytes. A missing
// file is an error wrapping fs.ErrNotExist.
func ReadUntrusted(path string, max int64) ([]byte, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, nil, fmt.Errorf("read %s: a symlink: %w", path, ErrUnsafe)
		}
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("read %s: not a regular file: %w", path, ErrUnsafe)
	}
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

package git

import (
	"bytes"
	"context"
	"io/fs"
	"path"
	"time"
)

// RevFS returns the files of commit rev of the clone as a read-only file
// system. It serves regular files only (fs.ReadFile, Open and Read); what
// it reads is what the forge has, never a working tree a session could
// have changed. ctx bounds every read.
func (r *Repo) RevFS(ctx context.Context, rev string) fs.FS {
	return revFS{ctx: ctx, r: r, rev: rev}
}

type revFS struct {
	ctx context.Context
	r   *Repo
	rev string
}

// Open implements fs.FS for regular files.
func (f revFS) Open(name string) (fs.File, error) {
	data, err := f.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &memFile{Reader: bytes.NewReader(data), info: fileInfo{name: path.Base(name), size: int64(len(data))}}, nil
}

type memFile struct {
	*bytes.Reader
	info fileInfo
}

func (m *memFile) Stat() (fs.FileInfo, error) { return m.info, nil }
func (m *memFile) Close() error               { return nil }

// ReadFile implements fs.ReadFileFS.
func (f revFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) || name == "." {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	data, err := f.r.ShowFile(f.ctx, f.rev, name)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return data, nil
}

// Stat implements fs.StatFS for regular files.
func (f revFS) Stat(name string) (fs.FileInfo, error) {
	data, err := f.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return fileInfo{name: path.Base(name), size: int64(len(data))}, nil
}

type fileInfo struct {
	name string
	size int64
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o444 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }

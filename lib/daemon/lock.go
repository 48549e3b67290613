package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/disinto/disinto/lib/datadir"
)

// Info is written to <data>/daemon.json while a daemon runs, so that
// `disinto status` can find its /status endpoint.
type Info struct {
	PID int `json:"pid"`
	// Listen is the address of the webhook receiver.
	Listen string `json:"listen"`
	// Status is the address of /status and /metrics; empty in the files
	// of daemons that served everything on Listen.
	Status  string    `json:"status,omitempty"`
	Started time.Time `json:"started"`
}

// DataLock is the one-daemon-per-data-dir lock.
type DataLock struct{ f *os.File }

// LockDataDir takes a non-blocking exclusive lock on <data>/daemon.lock.
func LockDataDir(dataDir string) (*DataLock, error) {
	path := datadir.New(dataDir).DaemonLock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by another disinto process (pid %s)", dataDir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
	}
	return &DataLock{f: f}, nil
}

func (l *DataLock) Release() {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
}

func writeDaemonInfo(dataDir string, info Info) error {
	data, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("encode daemon info: %w", err)
	}
	path := datadir.New(dataDir).DaemonInfo()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o640); err != nil {
		return fmt.Errorf("write daemon info: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write daemon info: %w", err)
	}
	return nil
}

func ReadInfo(dataDir string) (Info, bool) {
	var info Info
	data, err := os.ReadFile(datadir.New(dataDir).DaemonInfo())
	if err != nil || json.Unmarshal(data, &info) != nil || info.Listen == "" {
		return Info{}, false
	}
	return info, true
}

package supervisor

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// HostSource reads the host's memory and the usage of file systems. The
// real one reads /proc/meminfo and statfs; tests inject figures.
type HostSource interface {
	Memory() (Memory, error)
	// Disk returns the usage of the file system holding path.
	Disk(path string) (Disk, error)
}

// ProcHost is the HostSource of the machine: /proc/meminfo (of the host
// when the daemon sees the host's /proc, which a container does for
// memory) and statfs(2).
type ProcHost struct {
	// MemInfo is the meminfo file; default /proc/meminfo.
	MemInfo string
}

var _ HostSource = ProcHost{}

// Memory implements HostSource.
func (h ProcHost) Memory() (Memory, error) {
	path := h.MemInfo
	if path == "" {
		path = "/proc/meminfo"
	}
	f, err := os.Open(path)
	if err != nil {
		return Memory{}, fmt.Errorf("read memory: %w", err)
	}
	defer func() { _ = f.Close() }()
	return parseMemInfo(path, bufio.NewScanner(f))
}

// parseMemInfo reads the kB figures of MemTotal, MemAvailable, SwapTotal
// and SwapFree.
func parseMemInfo(path string, sc *bufio.Scanner) (Memory, error) {
	kb := map[string]int64{}
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
			kb[name] = n
		}
	}
	if err := sc.Err(); err != nil {
		return Memory{}, fmt.Errorf("read %s: %w", path, err)
	}
	avail, ok := kb["MemAvailable"]
	if !ok {
		return Memory{}, fmt.Errorf("%s: no MemAvailable line", path)
	}
	return Memory{AvailableMB: avail / 1024, TotalMB: kb["MemTotal"] / 1024,
		SwapUsedMB: (kb["SwapTotal"] - kb["SwapFree"]) / 1024}, nil
}

// Disk implements HostSource.
func (ProcHost) Disk(path string) (Disk, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return Disk{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	size := st.Blocks * uint64(st.Bsize)
	free := st.Bavail * uint64(st.Bsize)
	used := size - st.Bfree*uint64(st.Bsize)
	d := Disk{Path: path, Used: used, Size: size}
	if used+free > 0 {
		// As df computes it: used over what a user could have.
		d.Pct = float64(used) * 100 / float64(used+free)
	}
	return d, nil
}

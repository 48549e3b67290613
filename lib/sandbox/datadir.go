package sandbox

import (
	"fmt"
	"os"
	"syscall"
)

// PrivateDataDir makes everything the daemon keeps under dataDir private
// to it, for a daemon whose sessions run isolated: files and directories
// it creates from now on get no group or other permissions (the process
// umask), and the existing entries of dataDir (state, ledger, logs,
// clones, an env file kept there) lose theirs. dataDir itself stays
// searchable, so that sessions reach their workspaces under the entry
// named sessions, which it leaves alone; they cannot list past it.
func PrivateDataDir(dataDir, sessions string) error {
	syscall.Umask(0o077)
	if err := os.Chmod(dataDir, 0o711); err != nil {
		return fmt.Errorf("data dir %s: %w", dataDir, err)
	}
	// The entries are reached through the root, so none of them can lead
	// out of the data dir.
	root, err := os.OpenRoot(dataDir)
	if err != nil {
		return fmt.Errorf("data dir %s: %w", dataDir, err)
	}
	defer root.Close()
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return fmt.Errorf("data dir %s: %w", dataDir, err)
	}
	for _, e := range ents {
		if e.Name() == sessions || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		p := e.Name()
		fi, err := root.Lstat(p)
		if err != nil {
			return fmt.Errorf("data dir %s: %w", dataDir, err)
		}
		if fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := root.Chmod(p, fi.Mode().Perm()&0o700); err != nil {
			return fmt.Errorf("data dir %s: %w", dataDir, err)
		}
	}
	return nil
}

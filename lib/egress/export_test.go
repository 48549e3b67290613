//go:build linux

package egress

// CloseSocketOnly closes the firewall's netlink socket without deleting
// its table, as a crash would.
func CloseSocketOnly(f *Firewall) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.conn.Close()
	f.conn = nil
	return err
}

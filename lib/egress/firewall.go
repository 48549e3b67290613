//go:build linux

package egress

import (
	"errors"
	"fmt"
	"sync"

	"github.com/mdlayher/netlink"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Firewall is an installed table. It is safe for concurrent use.
type Firewall struct {
	mu    sync.Mutex
	conn  *netlink.Conn
	rs    *ruleset
	owned bool
	log   zerolog.Logger
}

// Install replaces any table of o.Table left in the namespace by an
// earlier process and installs the rules, with no session uid admitted
// yet. An error wraps ErrUnavailable when nftables cannot be used here
// at all (no CAP_NET_ADMIN, no nf_tables in the kernel).
func Install(o Options) (*Firewall, error) {
	rs, err := o.Rules.build()
	if err != nil {
		return nil, err
	}
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: o.NetNS})
	if err != nil {
		return nil, fmt.Errorf("%w: netlink: %w", ErrUnavailable, err)
	}
	f := &Firewall{conn: conn, rs: rs, log: o.Log}
	if err := f.install(); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return f, nil
}

func (f *Firewall) install() error {
	name := f.rs.table.Name
	// A table of the same name is an earlier process's: with the owner
	// flag the kernel removed it with that process, without it (an older
	// kernel, or a crash before this code) it is still here.
	var del nlBatch
	del.delTable(name)
	switch err := del.send(f.conn); {
	case err == nil:
		f.log.Warn().Str("table", name).Msg("egress: replaced a table left by an earlier process")
	case errno(err) == unix.ENOENT:
	case errno(err) == unix.EPERM && f.canCreate():
		return fmt.Errorf("egress: nftables table %s belongs to another live process in this network namespace: is another daemon using this data dir's instance id?", name)
	default:
		return unavailable(name, err)
	}
	var t nlBatch
	t.newTable(name, tableFlagOwner)
	err := t.send(f.conn)
	if errno(err) == unix.EOPNOTSUPP {
		// A kernel before 5.12: a plain table, which Close deletes.
		t = nlBatch{}
		t.newTable(name, 0)
		err = t.send(f.conn)
	} else if err == nil {
		f.owned = true
	}
	if err != nil {
		return unavailable(name, err)
	}
	var b nlBatch
	b.newSet(f.rs.set)
	for _, c := range f.rs.chains {
		b.newChain(c)
	}
	for _, r := range f.rs.rules {
		b.newRule(r)
	}
	if err := b.send(f.conn); err != nil {
		f.deleteTable()
		return unavailable(name, err)
	}
	return nil
}

// canCreate tells a table owned by another socket (EPERM on delete)
// from a process that may not change nftables at all: only the second
// fails to create a scratch table.
func (f *Firewall) canCreate() bool {
	probe := f.rs.table.Name + "_probe"
	var b nlBatch
	b.newTable(probe, tableFlagOwner)
	if b.send(f.conn) != nil {
		return false
	}
	var d nlBatch
	d.delTable(probe)
	_ = d.send(f.conn)
	return true
}

func unavailable(table string, err error) error {
	switch errno(err) {
	case unix.EPERM:
		return fmt.Errorf("%w: install nftables table %s: %w (the process lacks CAP_NET_ADMIN in its network namespace: give the container cap_add NET_ADMIN)", ErrUnavailable, table, err)
	case unix.EOPNOTSUPP, unix.EPROTONOSUPPORT, unix.ENOENT:
		return fmt.Errorf("%w: install nftables table %s: %w (the kernel lacks nf_tables or one of the expressions used: meta, ct, fib, lookup, reject)", ErrUnavailable, table, err)
	}
	return fmt.Errorf("%w: install nftables table %s: %w", ErrUnavailable, table, err)
}

// Table is the name of the installed table.
func (f *Firewall) Table() string { return f.rs.table.Name }

// Admit puts uid under the rules: its sockets reach only what they
// allow. Admitting a uid twice is not an error.
func (f *Firewall) Admit(uid int) error {
	if uid < 0 || uid > int(^uint32(0)) {
		return fmt.Errorf("egress: uid %d out of range", uid)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn == nil {
		return fmt.Errorf("egress: firewall closed; uid %d not admitted", uid)
	}
	var b nlBatch
	b.setElem(unix.NFT_MSG_NEWSETELEM, f.rs.set, uint32(uid))
	if err := b.send(f.conn); err != nil {
		return fmt.Errorf("egress: admit uid %d to nftables table %s: %w", uid, f.rs.table.Name, err)
	}
	return nil
}

// Revoke takes uid out of the rules again, once no process of it is
// left; a uid not admitted is not an error.
func (f *Firewall) Revoke(uid int) error {
	if uid < 0 || uid > int(^uint32(0)) {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn == nil {
		return nil
	}
	var b nlBatch
	b.setElem(unix.NFT_MSG_DELSETELEM, f.rs.set, uint32(uid))
	if err := b.send(f.conn); err != nil && errno(err) != unix.ENOENT {
		return fmt.Errorf("egress: revoke uid %d from nftables table %s: %w", uid, f.rs.table.Name, err)
	}
	return nil
}

// Close removes the table. Without it session uids reach everything:
// close it once no session runs (the daemon does at exit, after its
// work has ended).
func (f *Firewall) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn == nil {
		return nil
	}
	err := f.deleteTable()
	// Closing the owner's socket removes an owned table in any case.
	cerr := f.conn.Close()
	f.conn = nil
	if f.owned {
		return cerr
	}
	return errors.Join(err, cerr)
}

func (f *Firewall) deleteTable() error {
	var d nlBatch
	d.delTable(f.rs.table.Name)
	if err := d.send(f.conn); err != nil && errno(err) != unix.ENOENT {
		return fmt.Errorf("egress: delete nftables table %s: %w", f.rs.table.Name, err)
	}
	return nil
}

//go:build !linux

package egress

import (
	"fmt"
	"runtime"
)

// Firewall is an installed table; nftables exists on Linux only.
type Firewall struct{}

// Install fails off Linux: nothing can hold the rules.
func Install(o Options) (*Firewall, error) {
	if err := o.Rules.validate(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: nftables needs Linux, not %s", ErrUnavailable, runtime.GOOS)
}

// Table is the table's name.
func (*Firewall) Table() string { return "" }

// Admit puts uid under the rules.
func (*Firewall) Admit(int) error { return ErrUnavailable }

// Revoke takes uid out of the rules.
func (*Firewall) Revoke(int) error { return nil }

// Close removes the table.
func (*Firewall) Close() error { return nil }

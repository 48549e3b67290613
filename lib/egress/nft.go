//go:build linux

package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The table is sent over a netlink socket of our own rather than through
// nftables.Conn, which cannot set a table's flags: the table is created
// with the owner flag, so the kernel removes it when that socket closes,
// with the daemon however it ends (SIGKILL and crashes included), and no
// other process can change or delete it meanwhile. Kernels before 5.12
// do not know the flag; there the table is plain and Close deletes it.

// tableFlagOwner is NFT_TABLE_F_OWNER (linux/netfilter/nf_tables.h).
const tableFlagOwner = 0x2

// ackTimeout bounds the wait for the kernel's answer to one batch.
const ackTimeout = 10 * time.Second

// nlBatch is one nftables transaction: every message applies, or none.
type nlBatch struct {
	msgs []netlink.Message
	err  error
}

func (b *nlBatch) add(msgType int, flags netlink.HeaderFlags, attrs []netlink.Attribute) {
	data, err := netlink.MarshalAttributes(attrs)
	if err != nil && b.err == nil {
		b.err = err
	}
	b.msgs = append(b.msgs, netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | msgType), Flags: netlink.Request | netlink.Acknowledge | flags},
		Data:   append(nfgenmsg(unix.NFPROTO_INET, 0), data...),
	})
}

// nfgenmsg is the header of every nfnetlink message.
func nfgenmsg(family uint8, resID uint16) []byte {
	return binary.BigEndian.AppendUint16([]byte{family, unix.NFNETLINK_V0}, resID)
}

func cstr(s string) []byte { return append([]byte(s), 0) }

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func nested(typ uint16, attrs []netlink.Attribute) (netlink.Attribute, error) {
	data, err := netlink.MarshalAttributes(attrs)
	return netlink.Attribute{Type: unix.NLA_F_NESTED | typ, Data: data}, err
}

func (b *nlBatch) delTable(name string) {
	b.add(unix.NFT_MSG_DELTABLE, 0, []netlink.Attribute{{Type: unix.NFTA_TABLE_NAME, Data: cstr(name)}})
}

func (b *nlBatch) newTable(name string, flags uint32) {
	b.add(unix.NFT_MSG_NEWTABLE, netlink.Create|netlink.Excl, []netlink.Attribute{
		{Type: unix.NFTA_TABLE_NAME, Data: cstr(name)},
		{Type: unix.NFTA_TABLE_FLAGS, Data: be32(flags)},
	})
}

func (b *nlBatch) newSet(s *nftables.Set) {
	b.add(unix.NFT_MSG_NEWSET, netlink.Create|netlink.Excl, []netlink.Attribute{
		{Type: unix.NFTA_SET_TABLE, Data: cstr(s.Table.Name)},
		{Type: unix.NFTA_SET_NAME, Data: cstr(s.Name)},
		{Type: unix.NFTA_SET_FLAGS, Data: be32(0)},
		{Type: unix.NFTA_SET_KEY_TYPE, Data: be32(s.KeyType.GetNFTMagic())},
		{Type: unix.NFTA_SET_KEY_LEN, Data: be32(s.KeyType.Bytes)},
		{Type: unix.NFTA_SET_ID, Data: be32(s.ID)},
	})
}

func (b *nlBatch) newChain(c *nftables.Chain) {
	attrs := []netlink.Attribute{
		{Type: unix.NFTA_CHAIN_TABLE, Data: cstr(c.Table.Name)},
		{Type: unix.NFTA_CHAIN_NAME, Data: cstr(c.Name)},
	}
	if c.Hooknum != nil && c.Priority != nil {
		hook, err := nested(unix.NFTA_CHAIN_HOOK, []netlink.Attribute{
			{Type: unix.NFTA_HOOK_HOOKNUM, Data: be32(uint32(*c.Hooknum))},
			{Type: unix.NFTA_HOOK_PRIORITY, Data: be32(uint32(*c.Priority))},
		})
		if err != nil && b.err == nil {
			b.err = err
		}
		attrs = append(attrs, hook, netlink.Attribute{Type: unix.NFTA_CHAIN_TYPE, Data: cstr(string(c.Type))})
	}
	if c.Policy != nil {
		attrs = append(attrs, netlink.Attribute{Type: unix.NFTA_CHAIN_POLICY, Data: be32(uint32(*c.Policy))})
	}
	b.add(unix.NFT_MSG_NEWCHAIN, netlink.Create|netlink.Excl, attrs)
}

func (b *nlBatch) newRule(r *nftables.Rule) {
	elems := make([]netlink.Attribute, 0, len(r.Exprs))
	for _, e := range r.Exprs {
		data, err := expr.Marshal(byte(r.Table.Family), e)
		if err != nil && b.err == nil {
			b.err = fmt.Errorf("rule in %s: %w", r.Chain.Name, err)
		}
		elems = append(elems, netlink.Attribute{Type: unix.NLA_F_NESTED | unix.NFTA_LIST_ELEM, Data: data})
	}
	list, err := nested(unix.NFTA_RULE_EXPRESSIONS, elems)
	if err != nil && b.err == nil {
		b.err = err
	}
	b.add(unix.NFT_MSG_NEWRULE, netlink.Create|netlink.Append, []netlink.Attribute{
		{Type: unix.NFTA_RULE_TABLE, Data: cstr(r.Table.Name)},
		{Type: unix.NFTA_RULE_CHAIN, Data: cstr(r.Chain.Name)},
		list,
	})
}

// setElem adds (NFT_MSG_NEWSETELEM) or removes (NFT_MSG_DELSETELEM) the
// uid of the set s.
func (b *nlBatch) setElem(msgType int, s *nftables.Set, uid uint32) {
	key, err := nested(unix.NFTA_SET_ELEM_KEY, []netlink.Attribute{{Type: unix.NFTA_DATA_VALUE, Data: binaryutil.NativeEndian.PutUint32(uid)}})
	if err == nil {
		var elem, list netlink.Attribute
		if elem, err = nested(unix.NFTA_LIST_ELEM, []netlink.Attribute{key}); err == nil {
			list, err = nested(unix.NFTA_SET_ELEM_LIST_ELEMENTS, []netlink.Attribute{elem})
			b.add(msgType, netlink.Create, []netlink.Attribute{
				{Type: unix.NFTA_SET_ELEM_LIST_TABLE, Data: cstr(s.Table.Name)},
				{Type: unix.NFTA_SET_ELEM_LIST_SET, Data: cstr(s.Name)},
				list,
			})
		}
	}
	if err != nil && b.err == nil {
		b.err = err
	}
}

// send commits the batch on conn and waits for the kernel's answer to
// each message: the first error, or nil once all were applied.
func (b *nlBatch) send(conn *netlink.Conn) error {
	if b.err != nil {
		return b.err
	}
	msgs := make([]netlink.Message, 0, len(b.msgs)+2)
	msgs = append(msgs, netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_MSG_BATCH_BEGIN), Flags: netlink.Request},
		Data: nfgenmsg(unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES)})
	msgs = append(msgs, b.msgs...)
	msgs = append(msgs, netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_MSG_BATCH_END), Flags: netlink.Request},
		Data: nfgenmsg(unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES)})
	if err := conn.SetReadDeadline(time.Now().Add(ackTimeout)); err != nil {
		return err
	}
	if _, err := conn.SendMessages(msgs); err != nil {
		return err
	}
	for acked := 0; acked < len(b.msgs); {
		replies, err := conn.Receive()
		if err != nil {
			return err
		}
		for _, m := range replies {
			if m.Header.Type == netlink.Error {
				acked++
			}
		}
	}
	return nil
}

// errno is the system error inside a netlink error, if any.
func errno(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

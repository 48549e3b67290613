//go:build linux

package egress

import (
	"encoding/binary"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// ruleset is the table as nftables objects: the set of session uids, the
// chains and their rules, in order.
type ruleset struct {
	table  *nftables.Table
	set    *nftables.Set
	chains []*nftables.Chain
	rules  []*nftables.Rule
}

// build is the ruleset of r:
//
//	table inet <Table> {
//	  set sessions { type uid }          # filled by Admit
//	  chain output { type filter hook output priority filter; policy accept
//	    ct direction reply ct mark & LocalMark == LocalMark jump local_reply
//	    meta skuid @sessions jump session
//	  }
//	  chain local_reply {
//	    meta skuid >= MinSessionUID accept
//	    counter drop
//	  }
//	  chain session {
//	    ip daddr 169.254.0.0/16 counter drop
//	    ip6 daddr fe80::/10 counter drop
//	    ct state established,related accept
//	    <addr> tcp dport <port> accept     # each of Allow
//	    meta l4proto tcp fib daddr type local ct mark set ct mark | LocalMark accept
//	    meta l4proto tcp counter reject with tcp reset
//	    counter reject with icmpx admin-prohibited
//	  }
//	}
//
// Everything else a session uid sends is refused: other hosts and the
// stack's services, UDP and ICMP of every kind, DNS included (sessions
// resolve nothing: the proxy resolves the names it is asked for), and
// both IPv4 and IPv6. Link-local addresses are dropped before anything
// else can accept them.
func (r Rules) build() (*ruleset, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: r.Table}
	set := &nftables.Set{Table: t, Name: setSessions, ID: 1, KeyType: nftables.TypeUID}
	policy := nftables.ChainPolicyAccept
	out := &nftables.Chain{Table: t, Name: chainOutput, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &policy}
	reply := &nftables.Chain{Table: t, Name: chainLocalReply}
	session := &nftables.Chain{Table: t, Name: chainSession}
	rs := &ruleset{table: t, set: set, chains: []*nftables.Chain{out, reply, session}}
	add := func(c *nftables.Chain, exprs ...[]expr.Any) {
		var all []expr.Any
		for _, e := range exprs {
			all = append(all, e...)
		}
		rs.rules = append(rs.rules, &nftables.Rule{Table: t, Chain: c, Exprs: all})
	}

	add(out, ctDirectionReply(), ctMarkHas(LocalMark), verdict(expr.VerdictJump, chainLocalReply))
	add(out, skuidIn(set), verdict(expr.VerdictJump, chainSession))

	add(reply, skuidAtLeast(MinSessionUID), accept())
	add(reply, counter(), drop())

	add(session, daddrIn(netip.MustParsePrefix("169.254.0.0/16")), counter(), drop())
	add(session, daddrIn(netip.MustParsePrefix("fe80::/10")), counter(), drop())
	add(session, ctState(expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED), accept())
	for _, ap := range r.Allow {
		add(session, daddrIn(netip.PrefixFrom(ap.Addr(), ap.Addr().BitLen())), l4proto(unix.IPPROTO_TCP), tcpDport(ap.Port()), accept())
	}
	add(session, l4proto(unix.IPPROTO_TCP), daddrLocal(), ctMarkSet(LocalMark), accept())
	add(session, l4proto(unix.IPPROTO_TCP), counter(), []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_TCP_RST}})
	add(session, counter(), []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_ADMIN_PROHIBITED}})
	return rs, nil
}

// The expressions below all work in register 1.

func accept() []expr.Any { return verdict(expr.VerdictAccept, "") }
func drop() []expr.Any   { return verdict(expr.VerdictDrop, "") }

func verdict(k expr.VerdictKind, chain string) []expr.Any {
	return []expr.Any{&expr.Verdict{Kind: k, Chain: chain}}
}

func counter() []expr.Any { return []expr.Any{&expr.Counter{}} }

// ctDirectionReply: the packet answers the connection's first one.
func ctDirectionReply() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeyDIRECTION},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{ctDirReply}},
	}
}

// ctState: the connection is in one of the states of bits.
func ctState(bits uint32) []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: binaryutil.NativeEndian.PutUint32(bits), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
	}
}

// ctMarkHas: the connection's mark carries bit.
func ctMarkHas(bit uint32) []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeyMARK},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: binaryutil.NativeEndian.PutUint32(bit), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(bit)},
	}
}

// ctMarkSet adds bit to the connection's mark, keeping the others.
func ctMarkSet(bit uint32) []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeyMARK},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: binaryutil.NativeEndian.PutUint32(^bit), Xor: binaryutil.NativeEndian.PutUint32(bit)},
		&expr.Ct{Register: 1, Key: expr.CtKeyMARK, SourceRegister: true},
	}
}

// skuidIn: the sending socket's owner is in set.
func skuidIn(set *nftables.Set) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeySKUID, Register: 1},
		&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID},
	}
}

// skuidAtLeast: the sending socket's owner is uid min or above. The uid
// is loaded in host order and compared big-endian, as nft does.
func skuidAtLeast(min uint32) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeySKUID, Register: 1},
		&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4},
		&expr.Cmp{Op: expr.CmpOpGte, Register: 1, Data: binary.BigEndian.AppendUint32(nil, min)},
	}
}

// daddrIn: the packet is of p's family and goes to an address in p.
func daddrIn(p netip.Prefix) []expr.Any {
	p = p.Masked()
	proto, offset := byte(unix.NFPROTO_IPV4), uint32(16)
	if p.Addr().Is6() {
		proto, offset = unix.NFPROTO_IPV6, 24
	}
	addr := p.Addr().AsSlice()
	mask := make([]byte, len(addr))
	for i := 0; i < p.Bits(); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	out := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: uint32(len(addr))},
	}
	if p.Bits() < len(addr)*8 {
		out = append(out, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: uint32(len(addr)), Mask: mask, Xor: make([]byte, len(addr))})
	}
	return append(out, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: addr})
}

// daddrLocal: the packet goes to an address of this host (any family).
func daddrLocal() []expr.Any {
	return []expr.Any{
		&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)},
	}
}

func l4proto(p byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{p}},
	}
}

func tcpDport(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.BigEndian.AppendUint16(nil, port)},
	}
}

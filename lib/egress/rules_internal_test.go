//go:build linux

package egress

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
)

// render writes an expression the way `nft --debug=netlink` lists it,
// short enough to compare whole rules.
func render(e expr.Any) string {
	switch e := e.(type) {
	case *expr.Meta:
		return fmt.Sprintf("meta load %d", e.Key)
	case *expr.Ct:
		if e.SourceRegister {
			return fmt.Sprintf("ct set %d", e.Key)
		}
		return fmt.Sprintf("ct load %d", e.Key)
	case *expr.Cmp:
		return fmt.Sprintf("cmp %d %x", e.Op, e.Data)
	case *expr.Bitwise:
		return fmt.Sprintf("bitwise &%x ^%x", e.Mask, e.Xor)
	case *expr.Payload:
		return fmt.Sprintf("payload %d+%d/%d", e.Base, e.Offset, e.Len)
	case *expr.Lookup:
		return "lookup @" + e.SetName
	case *expr.Byteorder:
		return "byteorder hton"
	case *expr.Fib:
		return "fib daddr type"
	case *expr.Counter:
		return "counter"
	case *expr.Reject:
		return fmt.Sprintf("reject %d/%d", e.Type, e.Code)
	case *expr.Verdict:
		return fmt.Sprintf("verdict %d %s", e.Kind, e.Chain)
	}
	return fmt.Sprintf("%T", e)
}

// TestRulesBuild pins the expressions the firewall sends (the test
// against the kernel is TestFirewall): what each chain checks, in order.
func TestRulesBuild(t *testing.T) {
	rs, err := Rules{Table: "disinto_abc", Allow: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:4000"), netip.MustParseAddrPort("[::1]:4001")}}.build()
	if err != nil {
		t.Fatal(err)
	}
	if rs.table.Name != "disinto_abc" || rs.set.Name != "sessions" || rs.set.KeyType.Bytes != 4 {
		t.Errorf("table %q, set %q of %d bytes", rs.table.Name, rs.set.Name, rs.set.KeyType.Bytes)
	}
	var got []string
	for _, r := range rs.rules {
		parts := []string{r.Chain.Name + ":"}
		for _, e := range r.Exprs {
			parts = append(parts, render(e))
		}
		got = append(got, strings.Join(parts, " | "))
	}
	// Numbers: meta keys skuid 10, nfproto 15, l4proto 16; ct keys state
	// 0, direction 1, mark 3; cmp eq 0, neq 1, gte 5; payload network 1,
	// transport 2; verdicts accept 1, drop 0, jump -3 (as uint32).
	want := []string{
		"output: | ct load 1 | cmp 0 01 | ct load 3 | bitwise &00001000 ^00000000 | cmp 0 00001000 | verdict -3 local_reply",
		"output: | meta load 10 | lookup @sessions | verdict -3 session",
		"local_reply: | meta load 10 | byteorder hton | cmp 5 000186a0 | verdict 1 ",
		"local_reply: | counter | verdict 0 ",
		"session: | meta load 15 | cmp 0 02 | payload 1+16/4 | bitwise &ffff0000 ^00000000 | cmp 0 a9fe0000 | counter | verdict 0 ",
		"session: | meta load 15 | cmp 0 0a | payload 1+24/16 | bitwise &ffc00000000000000000000000000000 ^00000000000000000000000000000000 | cmp 0 fe800000000000000000000000000000 | counter | verdict 0 ",
		"session: | ct load 0 | bitwise &06000000 ^00000000 | cmp 1 00000000 | verdict 1 ",
		"session: | meta load 15 | cmp 0 02 | payload 1+16/4 | cmp 0 7f000001 | meta load 16 | cmp 0 06 | payload 2+2/2 | cmp 0 0fa0 | verdict 1 ",
		"session: | meta load 15 | cmp 0 0a | payload 1+24/16 | cmp 0 00000000000000000000000000000001 | meta load 16 | cmp 0 06 | payload 2+2/2 | cmp 0 0fa1 | verdict 1 ",
		"session: | meta load 16 | cmp 0 06 | fib daddr type | cmp 0 02000000 | ct load 3 | bitwise &ffffefff ^00001000 | ct set 3 | verdict 1 ",
		"session: | meta load 16 | cmp 0 06 | counter | reject 1/0",
		"session: | counter | reject 2/3",
	}
	if len(got) != len(want) {
		t.Fatalf("%d rules, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rule %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

func TestRulesValidate(t *testing.T) {
	for _, r := range []Rules{
		{Table: ""},
		{Table: "bad name"},
		{Table: "ok", Allow: []netip.AddrPort{{}}},
		{Table: "ok", Allow: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}},
	} {
		if _, err := r.build(); err == nil {
			t.Errorf("%+v: no error", r)
		}
	}
}

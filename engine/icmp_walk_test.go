package engine

import (
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// A short quote (the ports only, no sender id) passes the address rules
// when it comes from a host we hold RPCs with, quoting a packet to it: a
// stranger that sent us requests sends one from its own address. It
// looks at the client RPCs to that host alone (the only ones it can
// fail, none of them a stranger's making), not at every RPC of the
// endpoint: 1,000 server RPCs the stranger made us hold and 10 client
// RPCs to a server are not walked for it; the server's own short quote
// looks at its 10 and fails them. IPv4 and IPv6 alike.
func TestReceiveICMP_shortQuoteLooksOnlyAtThePeersClientRPCs(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		n := newTestNet(t)
		c, _, server, stranger := addPair(n, v6, nil)
		me := wire.MapIPv4(c.ip)
		if v6 {
			me = c.ip6
		}
		if _, err := c.e.Bind(99); err != nil {
			t.Fatal(err)
		}
		for i := range 1_000 {
			c.e.Receive(homaFrame(stranger, me, oneRequest(0x8000, 99, uint64(2*i+2))))
		}
		cli, _ := c.e.OpenClient()
		for i := range 10 {
			if _, err := cli.Send(Addr{IP: netip.AddrFrom16(server).Unmap(), Port: 7}, msg(10, byte(i))); err != nil {
				t.Fatal(err)
			}
		}
		if got := c.e.NumRPCs(); got != 1_010 {
			t.Fatalf("v6 %v: %d RPCs, want 1,000 server RPCs and 10 client RPCs", v6, got)
		}
		short := func(from [16]byte) []byte {
			return unreachableTo(c, v6, from, me, from, wire.IPProtoHoma, quotedHoma(cli.Num(), 7, 0, 8))
		}
		c.e.Receive(short(stranger))
		if got := c.e.icmpScanned; got != 0 || c.e.NumRPCs() != 1_010 {
			t.Fatalf("v6 %v: the stranger's short quote looked at %d RPCs (%d left), want 0: it holds no client RPC of ours",
				v6, got, c.e.NumRPCs())
		}
		c.e.Receive(short(server))
		if got := c.e.icmpScanned; got != 10 || c.e.NumRPCs() != 1_000 {
			t.Fatalf("v6 %v: the server's short quote looked at %d RPCs (%d left), want its 10, failed", v6, got, c.e.NumRPCs())
		}
		for range 10 {
			if m := receive(t, cli); m.Err != ErrPortUnreachable {
				t.Fatalf("v6 %v: result %+v, want the port unreachable", v6, m)
			}
		}
	}
}

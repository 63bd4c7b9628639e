package host

import (
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

var (
	me6   = hostAddr{ip: me.ip, ip6: [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}, mac: me.mac}
	peer6 = hostAddr{ip6: [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 2}, mac: peer.mac}
)

// v6Frame builds an Ethernet frame from `from` carrying an ICMPv6
// message made by build (writing into b from its offset, returning the
// message length) from src to dst at hop limit hops.
func v6Frame(from hostAddr, ethDst wire.MAC, src, dst [16]byte, hops uint8, msg []byte) []byte {
	b := make([]byte, wire.EthernetHeaderLen+wire.IPv6HeaderLen)
	eth := wire.EthernetFields{Dst: ethDst, Src: from.mac, Type: wire.EtherTypeIPv6}
	eth.Encode(b)
	ip := wire.IPv6Fields{PayloadLength: uint16(len(msg)), NextHeader: wire.IPProtoICMPv6, HopLimit: hops, Src: src, Dst: dst}
	ip.Encode(b[wire.EthernetHeaderLen:])
	return append(b, msg...)
}

func ndp(f wire.NDPFields, src, dst [16]byte) []byte {
	m := make([]byte, wire.NDPMessageLen)
	f.Encode(m, src, dst)
	return m
}

// run parses the frame as the receive path does and hands it to
// handleIPv6.
func run(t *testing.T, f []byte, nt *neighbourTable[[16]byte], c *StackCounters) stackVerdict {
	t.Helper()
	ip, proto, off, r := wire.ParseIPv6(f[wire.EthernetHeaderLen:])
	if r != wire.DropNone {
		t.Fatalf("ParseIPv6: %v", r)
	}
	return handleIPv6(f, ip, proto, off, me6, nt, 0, c)
}

// A solicitation for our address, to its solicited-node address, is
// answered in place by a solicited advertisement with our MAC, to the
// asker, and the asker is learned.
func TestHandleIPv6_solicitationAnswered(t *testing.T) {
	nt := newNeighbourTable[[16]byte](100, 1000, 3)
	var c StackCounters
	sn := wire.SolicitedNode(me6.ip6)
	f := v6Frame(peer6, wire.MulticastMAC(sn), peer6.ip6, sn, 255,
		ndp(wire.NDPFields{Type: wire.ICMPv6NeighborSolicit, Target: me6.ip6, MAC: peer6.mac}, peer6.ip6, sn))
	if v := run(t, f, nt, &c); v != stackReply {
		t.Fatalf("verdict %v (%+v)", v, c)
	}
	e := wire.Ethernet(f)
	ip, _, off, r := wire.ParseIPv6(f[wire.EthernetHeaderLen:])
	m := wire.ParseICMPv6(ip, off)
	if r != wire.DropNone || m == nil || m.Type() != wire.ICMPv6NeighborAdvert || m.Target() != me6.ip6 ||
		m.NDPFlags() != wire.NDPFlagSolicited|wire.NDPFlagOverride || ip.Src() != me6.ip6 || ip.Dst() != peer6.ip6 ||
		e.Dst() != peer6.mac || e.Src() != me6.mac {
		t.Fatalf("advertisement: %v, % x", r, f)
	}
	if mac, ok := m.LinkAddr(wire.NDPOptTargetLinkAddr); !ok || mac != me6.mac {
		t.Errorf("target link address %v %v", mac, ok)
	}
	if n, _ := nt.Resolve(peer6.ip6, 1); n.State != engine.LinkReachable || n.MAC != peer6.mac {
		t.Error("the solicitor was not learned")
	}
	if c.NeighborSolicits != 1 {
		t.Errorf("counters %+v", c)
	}
}

// An advertisement answering our solicitation teaches the table; echo is
// answered; what is not for us, or routed (hop limit below 255), is
// dropped and counted.
func TestHandleIPv6_advertEchoAndRefusals(t *testing.T) {
	nt := newNeighbourTable[[16]byte](100, 1000, 3)
	var c StackCounters
	nt.Resolve(peer6.ip6, 0)
	na := v6Frame(peer6, me6.mac, peer6.ip6, me6.ip6, 255,
		ndp(wire.NDPFields{Type: wire.ICMPv6NeighborAdvert, Flags: wire.NDPFlagSolicited, Target: peer6.ip6, MAC: peer6.mac}, peer6.ip6, me6.ip6))
	if v := run(t, na, nt, &c); v != stackLearn || c.NeighborAdverts != 1 {
		t.Fatalf("advertisement: verdict %v, %+v", v, c)
	}
	if n, _ := nt.Resolve(peer6.ip6, 1); n.State != engine.LinkReachable || n.MAC != peer6.mac {
		t.Error("not learned from the advertisement")
	}
	echo := []byte{wire.ICMPv6EchoRequest, 0, 0, 0, 0, 7, 0, 1, 'h', 'i'}
	wire.ICMPv6(echo).SetChecksum(peer6.ip6, me6.ip6)
	f := v6Frame(peer6, me6.mac, peer6.ip6, me6.ip6, 64, echo)
	if v := run(t, f, nt, &c); v != stackReply {
		t.Fatalf("echo: verdict %v", v)
	}
	ip, _, off, _ := wire.ParseIPv6(f[wire.EthernetHeaderLen:])
	if m := wire.ParseICMPv6(ip, off); m == nil || m.Type() != wire.ICMPv6EchoReply || m.ID() != 7 || ip.Dst() != peer6.ip6 || ip.Src() != me6.ip6 {
		t.Fatalf("echo reply: % x", f)
	}
	before := c
	other := [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 9}
	sn := wire.SolicitedNode(other)
	for _, tc := range []struct {
		name string
		f    []byte
	}{
		{"solicitation for another address", v6Frame(peer6, wire.MulticastMAC(sn), peer6.ip6, sn, 255,
			ndp(wire.NDPFields{Type: wire.ICMPv6NeighborSolicit, Target: other, MAC: peer6.mac}, peer6.ip6, sn))},
		{"routed solicitation", v6Frame(peer6, me6.mac, peer6.ip6, me6.ip6, 64,
			ndp(wire.NDPFields{Type: wire.ICMPv6NeighborSolicit, Target: me6.ip6, MAC: peer6.mac}, peer6.ip6, me6.ip6))},
	} {
		if v := run(t, tc.f, nt, &c); v != stackDrop {
			t.Errorf("%s: verdict %v", tc.name, v)
		}
	}
	if c.NotForUs != before.NotForUs+1 || c.Malformed != before.Malformed+1 {
		t.Errorf("counters %+v, before %+v", c, before)
	}
	// An ICMPv6 error is the engine's.
	unreach := make([]byte, wire.ICMPv6HeaderLen+wire.ICMPv6ErrorQuoteLen)
	unreach[0], unreach[1] = wire.ICMPv6DestUnreachable, wire.ICMPv6PortUnreachable
	wire.ICMPv6(unreach).SetChecksum(peer6.ip6, me6.ip6)
	if v := run(t, v6Frame(peer6, me6.mac, peer6.ip6, me6.ip6, 64, unreach), nt, &c); v != stackICMPv6Error {
		t.Errorf("port unreachable: verdict %v", v)
	}
	// A host without an IPv6 address answers nothing.
	var c2 StackCounters
	if v := handleIPv6(f, ip, wire.IPProtoICMPv6, off, me, nt, 0, &c2); v != stackDrop || c2.Unsupported != 1 {
		t.Errorf("no IPv6 address: verdict %v", v)
	}
}

// The solicitation the host sends to resolve a neighbour is RFC 4861's:
// it parses, to the target's solicited-node address and its MAC.
func TestNDPSolicit_frame(t *testing.T) {
	b := make([]byte, 128)
	n := ndpSolicit(b, me6, peer6.ip6, false, 0)
	f := b[:n]
	ip, proto, off, r := wire.ParseIPv6(f[wire.EthernetHeaderLen:])
	if r != wire.DropNone || proto != wire.IPProtoICMPv6 {
		t.Fatalf("%v %d", r, proto)
	}
	m := wire.ParseICMPv6(ip, off)
	sn := wire.SolicitedNode(peer6.ip6)
	if m == nil || m.Type() != wire.ICMPv6NeighborSolicit || m.Target() != peer6.ip6 || ip.Dst() != sn ||
		wire.Ethernet(f).Dst() != wire.MulticastMAC(sn) {
		t.Fatalf("solicitation % x", f)
	}
	if mac, ok := m.LinkAddr(wire.NDPOptSourceLinkAddr); !ok || mac != me6.mac {
		t.Errorf("source link address %v %v", mac, ok)
	}
}

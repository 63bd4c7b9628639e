package engine

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// portUnreachable returns the IPv4 packet of an ICMP port unreachable from
// src to dst quoting a Homa packet from dst to src port dport.
func portUnreachable(src, dst [4]byte, dport uint16) wire.IPv4 {
	quoted := make([]byte, wire.ICMPErrorQuoteLen)
	q := wire.HomaIPv4Fields(dst, src, 6, 100)
	q.Encode(quoted)
	binary.BigEndian.PutUint16(quoted[wire.IPv4MinHeaderLen:], 0x8000)
	binary.BigEndian.PutUint16(quoted[wire.IPv4MinHeaderLen+2:], dport)
	return icmpUnreachable4(src, dst, quoted)
}

// icmpUnreachable4 returns the IPv4 packet of an ICMP port unreachable
// from src to dst quoting the bytes quoted.
func icmpUnreachable4(src, dst [4]byte, quoted []byte) wire.IPv4 {
	m := wire.ICMP(append(make([]byte, wire.ICMPHeaderLen), quoted...))
	m[0], m[1] = wire.ICMPDestUnreachable, wire.ICMPPortUnreachable
	m.UpdateChecksum()
	ipf := wire.HomaIPv4Fields(src, dst, 0, len(m))
	ipf.Protocol = wire.IPProtoICMP
	ip := make([]byte, wire.IPv4MinHeaderLen+len(m))
	ipf.Encode(ip)
	copy(ip[wire.IPv4MinHeaderLen:], m)
	return ip
}

// frameOf wraps an IPv4 packet in an Ethernet frame.
func frameOf(ip []byte) []byte {
	b := make([]byte, wire.EthernetHeaderLen+len(ip))
	eth := wire.EthernetFields{Type: wire.EtherTypeIPv4}
	eth.Encode(b)
	copy(b[wire.EthernetHeaderLen:], ip)
	return b
}

func TestReceiveICMP_portUnreachableFailsClientRPCsToThatPort(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	cli, _ := c.e.OpenClient()
	s := [4]byte{10, 0, 0, 2}
	n.addHost("s", 2, nil)
	id7, _ := cli.Send(Addr{IP: netip.AddrFrom4(s), Port: 7}, msg(10, 0))
	cli.Send(Addr{IP: netip.AddrFrom4(s), Port: 8}, msg(10, 0))
	c.e.ReceiveICMP(portUnreachable(s, c.ip, 7))
	if m := receive(t, cli); m.ID != id7 || m.Err != ErrPortUnreachable || c.e.NumRPCs() != 1 {
		t.Fatalf("result %+v, %d RPCs left", m, c.e.NumRPCs())
	}
	if c.e.Metrics().ICMPReceived != 1 {
		t.Fatal("not counted")
	}
}

func TestReceiveLink_icmpRoutedAndBadICMPCounted(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost("c", 1, nil)
	cli, _ := c.e.OpenClient()
	s := [4]byte{10, 0, 0, 2}
	n.addHost("s", 2, nil)
	cli.Send(Addr{IP: netip.AddrFrom4(s), Port: 7}, msg(10, 0))
	// Echo (the host's), a corrupted ICMP checksum, one to another
	// address: none touches the RPC.
	echo := portUnreachable(s, c.ip, 7)
	echo[20] = wire.ICMPEchoRequest
	wire.ICMP(echo[20:]).UpdateChecksum()
	corrupt := portUnreachable(s, c.ip, 7)
	corrupt[len(corrupt)-1] ^= 1
	other := portUnreachable(s, [4]byte{10, 0, 0, 9}, 7)
	for _, ip := range []wire.IPv4{echo, corrupt} {
		c.e.Receive(frameOf(ip))
	}
	c.e.Receive(frameOf(other))
	m := c.e.Metrics()
	if m.Drops[DropBadICMP] != 2 || m.Drops[DropNotForUs] != 1 || c.e.NumRPCs() != 1 {
		t.Fatalf("drops %v, %d RPCs", m.Drops, c.e.NumRPCs())
	}
	var l wire.Link
	wire.ParseLink(frameOf(portUnreachable(s, c.ip, 7)), &l)
	c.e.ReceiveLink(&l)
	if res := receive(t, cli); res.Err != ErrPortUnreachable {
		t.Fatalf("result %+v", res)
	}
}

// ReceiveLink, given the link header a host decoded, does what Receive
// does with the whole frame, tagged or not.
func TestReceiveLink_sameAsReceive(t *testing.T) {
	for _, tagged := range []bool{false, true} {
		n := newTestNet(t)
		n.addHost("c", 1, nil)
		s := n.addHost("s", 2, nil)
		srv, _ := s.e.Bind(99)
		f := dataFrame(100, 100, 0, msg(100, 3))
		if tagged {
			f = append(append(append([]byte(nil), f[:12]...), 0x81, 0, 0xa0, 5), f[12:]...)
		}
		var l wire.Link
		if wire.ParseLink(f, &l) != wire.DropNone {
			t.Fatal("link")
		}
		s.e.ReceiveLink(&l)
		if m := receive(t, srv); string(m.Data) != string(msg(100, 3)) {
			t.Fatalf("tagged %v: %q", tagged, m.Data)
		}
		l.Type = wire.EtherTypeARP
		s.e.ReceiveLink(&l)
		if s.e.Metrics().Drops[DropCause(wire.DropNotIPv4)] != 1 {
			t.Fatal("not counted as not IPv4")
		}
	}
}

package engine

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// Two endpoints with IPv6 addresses exchange RPCs over IPv6: every frame
// is IPv6 (next header 146, the priority in the traffic class), DATA
// packets carry 20 bytes less than over IPv4, messages of one packet to
// 1 MB (granted, with some frames lost and resent) arrive whole, and the
// server sees the client's IPv6 address.
func TestIPv6_rpcsByteExact(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost6("c", 1, nil)
	s := n.addHost6("s", 2, nil)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	frames, data := 0, 0
	n.inspect = func(frame []byte, line string) {
		var l wire.Link
		var f wire.Frame
		wire.ParseLink(frame, &l)
		if r := wire.ParseHomaIP(&l, &f, true); r != wire.DropNone || f.IPv6 == nil || f.IPv4 != nil {
			t.Fatalf("not Homa over IPv6 (%v): %s", r, line)
		}
		if got, want := f.IPv6.Priority(), uint8(prioOf(line)); strings.Contains(line, " p") && got != want {
			t.Fatalf("traffic class priority %d, line says %d: %s", got, want, line)
		}
		frames++
		if f.Type == wire.TypeData && len(f.Payload) > wire.PayloadPerPacket(1500, wire.IPv6HeaderLen) {
			t.Fatalf("DATA of %d bytes over IPv6: %s", len(f.Payload), line)
		}
		if f.Type == wire.TypeData {
			data++
		}
	}
	lost := 0
	n.drop = func(line string) bool {
		lost++
		return strings.Contains(line, "xmit DATA") && lost%37 == 0
	}
	dst := Addr{IP: netip.AddrFrom16(s.ip6), Port: 99}
	for _, size := range []int{1, 100, 1404, 1405, 60_000, 1_000_000} {
		req := msg(size, byte(size))
		id, err := cli.Send(dst, req)
		if err != nil {
			t.Fatalf("Send %d bytes: %v", size, err)
		}
		var m, r Message
		for i := 0; i < 300 && m.Data == nil; i++ {
			n.flush()
			if got, ok := srv.Receive(); ok {
				m = got
				break
			}
			n.advance(1_000_000)
		}
		if !bytes.Equal(m.Data, req) || m.Peer.IP != netip.AddrFrom16(c.ip6) {
			t.Fatalf("%d bytes: request of %d bytes from %v", size, len(m.Data), m.Peer.IP)
		}
		if err := srv.Reply(m, req); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 300; i++ {
			n.flush()
			if got, ok := cli.Receive(); ok {
				r = got
				break
			}
			n.advance(1_000_000)
		}
		if r.ID != id || r.Err != nil || !bytes.Equal(r.Data, req) || r.Peer.IP != netip.AddrFrom16(s.ip6) {
			t.Fatalf("%d bytes: response %v, %d bytes from %v", size, r.Err, len(r.Data), r.Peer.IP)
		}
	}
	if frames == 0 || data == 0 || c.e.Metrics().ResentPackets+s.e.Metrics().ResentPackets == 0 {
		t.Errorf("%d frames, %d DATA, %d resent", frames, data, c.e.Metrics().ResentPackets+s.e.Metrics().ResentPackets)
	}
}

// prioOf returns the priority a log line names ("... p5"), or 7.
func prioOf(line string) int {
	if i := strings.LastIndex(line, " p"); i >= 0 && i+2 < len(line) {
		return int(line[i+2] - '0')
	}
	return 7
}

// An endpoint reaches IPv4 and IPv6 peers side by side; one with no
// IPv6 address refuses an IPv6 destination (ErrAddress), as one with only
// IPv6 refuses IPv4.
func TestIPv6_dualStackAndRefusals(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost6("c", 1, nil)
	s4 := n.addHost("s4", 2, nil)
	s6 := n.addHost6("s6", 3, nil)
	srv4, _ := s4.e.Bind(99)
	srv6, _ := s6.e.Bind(99)
	cli, _ := c.e.OpenClient()
	cli.Send(Addr{IP: netip.AddrFrom4(s4.ip), Port: 99}, msg(100, 1))
	cli.Send(Addr{IP: netip.AddrFrom16(s6.ip6), Port: 99}, msg(200, 2))
	n.flush()
	if m := receive(t, srv4); len(m.Data) != 100 || m.Peer.IP != netip.AddrFrom4(c.ip) {
		t.Errorf("over IPv4: %d bytes from %v", len(m.Data), m.Peer.IP)
	}
	if m := receive(t, srv6); len(m.Data) != 200 || m.Peer.IP != netip.AddrFrom16(c.ip6) {
		t.Errorf("over IPv6: %d bytes from %v", len(m.Data), m.Peer.IP)
	}
	// s4 has no IPv6 address.
	p4, _ := s4.e.OpenClient()
	if _, err := p4.Send(Addr{IP: netip.AddrFrom16(s6.ip6), Port: 99}, msg(1, 1)); err != ErrAddress {
		t.Errorf("IPv6 from an IPv4-only endpoint: %v", err)
	}
	if _, err := p4.Send(Addr{IP: netip.MustParseAddr("fe80::1%eth0"), Port: 99}, msg(1, 1)); err != ErrAddress {
		t.Errorf("a zoned address: %v", err)
	}
	v6only := n.addHost("v6", 4, func(cfg *Config) { cfg.IP, cfg.IP6 = [4]byte{}, [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 4} })
	p6, _ := v6only.e.OpenClient()
	if _, err := p6.Send(Addr{IP: netip.AddrFrom4(s4.ip), Port: 99}, msg(1, 1)); err != ErrAddress {
		t.Errorf("IPv4 from an IPv6-only endpoint: %v", err)
	}
	// A frame to another IPv6 address is not for us.
	before := s6.e.Metrics().Drops[DropNotForUs]
	cli.Send(Addr{IP: netip.AddrFrom16(s6.ip6), Port: 99}, msg(10, 3))
	f := c.out[len(c.out)-1].frame
	wire.IPv6(f[wire.EthernetHeaderLen:]).SetDst([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 9})
	s6.e.Receive(f)
	if s6.e.Metrics().Drops[DropNotForUs] != before+1 {
		t.Error("a frame to another IPv6 address was taken")
	}
}

// Hijacked framing over IPv6 carries a checksum under the IPv6
// pseudo-header, which the receiver checks.
func TestIPv6_hijackedChecksums(t *testing.T) {
	n := newTestNet(t)
	bad := 0
	n.inspect = func(frame []byte, line string) {
		var l wire.Link
		var f wire.Frame
		wire.ParseLink(frame, &l)
		if wire.ParseHomaIP(&l, &f, true) != wire.DropNone || !f.Hijacked {
			t.Fatalf("not hijacked Homa over IPv6: %s", line)
		}
		if !wire.IsHomaChecksumValid(wire.PseudoSumIPv6(f.IPv6.Src(), f.IPv6.Dst(), wire.IPProtoTCP, len(f.Homa)), f.Homa, nil) {
			bad++
		}
	}
	hijack := func(cfg *Config) {
		cfg.PeerOptions = func(netip.Addr) PeerOptions { return PeerOptions{Hijack: true} }
	}
	c := n.addHost6("c", 1, hijack)
	s := n.addHost6("s", 2, hijack)
	srv, _ := s.e.Bind(99)
	cli, _ := c.e.OpenClient()
	cli.Send(Addr{IP: netip.AddrFrom16(s.ip6), Port: 99}, msg(50_000, 1))
	n.flush()
	if m := receive(t, srv); len(m.Data) != 50_000 || bad != 0 || s.e.Metrics().Drops[DropCause(wire.DropBadHomaChecksum)] != 0 {
		t.Fatalf("%d bytes, %d bad checksums", len(m.Data), bad)
	}
}

// The header template over IPv6 is what wire encodes for each priority
// and length.
func TestIPv6_headersMatchWire(t *testing.T) {
	var now int64 = 1_000_000_000
	e, _ := newCountingEndpoint(t, &now, func(c *Config) {
		c.IP6 = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 2}
		c.MAC = wire.MAC{2, 0, 0, 0, 0, 2}
	})
	peer := [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}
	p := e.peerFor(peer)
	if p == nil || !p.v6 || p.homaOff != wire.EthernetHeaderLen+wire.IPv6HeaderLen || p.payload != 1404 {
		t.Fatalf("peer %+v", p)
	}
	got, want := make([]byte, 64), make([]byte, 64)
	for prio := range 8 {
		for _, homaLen := range []int{28, 56 + 1404} {
			e.writeHeaders(got, p, prio, homaLen)
			eth := e.ethernet(p, prio)
			eth.Encode(want)
			ip := wire.HomaIPv6Fields(e.cfg.IP6, peer, uint8(prio), homaLen)
			ip.Encode(want[wire.EthernetHeaderLen:])
			if !bytes.Equal(got[:p.homaOff], want[:p.homaOff]) {
				t.Fatalf("prio %d, %d bytes:\n got % x\nwant % x", prio, homaLen, got[:p.homaOff], want[:p.homaOff])
			}
		}
	}
}

// A request to a port nobody bound at an IPv6 server is answered with an
// ICMPv6 port unreachable, which fails the client's RPC at once.
func TestIPv6_portUnreachable(t *testing.T) {
	n := newTestNet(t)
	c := n.addHost6("c", 1, nil)
	s := n.addHost6("s", 2, nil)
	sawICMP := false
	n.inspect = func(frame []byte, line string) {
		var l wire.Link
		wire.ParseLink(frame, &l)
		if ip, proto, off, r := wire.ParseIPv6(l.Payload); r == wire.DropNone && proto == wire.IPProtoICMPv6 {
			m := wire.ParseICMPv6(ip, off)
			sawICMP = m != nil && m.Type() == wire.ICMPv6DestUnreachable && m.Code() == wire.ICMPv6PortUnreachable && ip.Dst() == c.ip6
		}
	}
	cli, _ := c.e.OpenClient()
	id, _ := cli.Send(Addr{IP: netip.AddrFrom16(s.ip6), Port: 77}, msg(100, 1))
	n.flush()
	m := receive(t, cli)
	if !sawICMP || m.ID != id || m.Err != ErrPortUnreachable || s.e.Metrics().ICMPPortUnreach != 1 || c.e.Metrics().ICMPReceived != 1 {
		t.Fatalf("ICMPv6 seen %v; result %v; sent %d received %d", sawICMP, m.Err, s.e.Metrics().ICMPPortUnreach, c.e.Metrics().ICMPReceived)
	}
}

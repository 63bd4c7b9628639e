package host

import (
	"bytes"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// FuzzStackFrame feeds arbitrary frames to the host's stack duties — ARP
// (handleARP), IPv6 neighbour discovery and echo (handleIPv6), ICMP echo
// (handleICMP) — over small neighbour tables of both families while the
// engine holds some of their entries, and checks after every frame that
// nothing panicked, that an answer built in place is one we may send
// (from our MAC, as long as the frame, to the asker) and that the tables
// keep their invariants (checkNeighbourTable; the IPv6 table's bound).
//
// The input is a list of records: a control byte, a length byte, then
// that many frame bytes (the last record takes what is left). Control
// bits 0..1 pick the handler (ARP, IPv6, IPv4, or a pass: the engine
// resolves a peer and time goes on); bit 2 fixes the lengths and
// checksums of the IP and ICMPv6 headers, so that mutated frames get
// past the parsers. Seeds are frames the stack tests use.
//
//	go test ./host -run='^$' -fuzz=^FuzzStackFrame$ -fuzztime=60s
func FuzzStackFrame(f *testing.F) {
	for _, s := range stackSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const ms = int64(1e6)
		nt := newNeighbourTable[[4]byte](100*ms, 1000*ms, 3)
		nt6 := newNeighbourTable[[16]byte](100*ms, 1000*ms, 3)
		nt.maxEntries, nt6.maxEntries = 8, 8
		holds := map[[4]byte]*engine.Neighbour{}
		var c StackCounters
		now := int64(1e9)
		for step := 0; len(in) >= 2; step++ {
			ctrl, n := in[0], int(in[1])
			in = in[2:]
			if n > len(in) || ctrl&3 == 3 && n == 0 {
				n = len(in)
			}
			frame := bytes.Clone(in[:n])
			in = in[n:]
			switch ctrl & 3 {
			case 0:
				fuzzARP(t, frame, nt, now, &c)
			case 1:
				fuzzIPv6(t, frame, ctrl&4 != 0, nt6, now, &c)
			case 2:
				fuzzIPv4(t, frame, ctrl&4 != 0, &c)
			default: // the engine resolves the peer named by the first byte, and time goes on
				if len(frame) > 0 {
					ip := [4]byte{10, 0, 0, frame[0] & 15}
					if e, _ := nt.Resolve(ip, now); e != nil {
						holds[ip] = e
					}
					now += int64(ctrl>>2) * 10 * ms
				}
				nt.Retries(now, func(a [4]byte) {
					if e := nt.entries[a]; e == nil || !e.held {
						t.Fatalf("step %d: asked about %v, which is not held", step, a)
					}
				})
				nt6.Retries(now, func([16]byte) {}) // nothing resolves IPv6 here: nothing is held
			}
			checkNeighbourTable(t, nt, holds, step)
			if nt6.dynamic > nt6.maxEntries || nt6.dynamic != len(nt6.entries) {
				t.Fatalf("step %d: IPv6 table holds %d dynamic of %d entries, bound %d", step, nt6.dynamic, len(nt6.entries), nt6.maxEntries)
			}
		}
	})
}

// fuzzARP hands frame to handleARP and checks an answer built in place.
func fuzzARP(t *testing.T, frame []byte, nt *neighbourTable[[4]byte], now int64, c *StackCounters) {
	if len(frame) < wire.EthernetHeaderLen {
		return
	}
	asker := wire.ARP(frame[wire.EthernetHeaderLen:])
	var askerMAC wire.MAC
	if asker.IsValid() {
		askerMAC = asker.SenderMAC()
	}
	size := len(frame)
	if handleARP(frame, wire.EthernetHeaderLen, me, nt, now, c) != stackReply {
		return
	}
	a, e := wire.ARP(frame[wire.EthernetHeaderLen:]), wire.Ethernet(frame)
	if len(frame) != size || e.Src() != me.mac || e.Dst() != askerMAC || a.Op() != wire.ARPReply ||
		a.SenderIP() != me.ip || a.SenderMAC() != me.mac || a.TargetMAC() != askerMAC {
		t.Fatalf("ARP answer: eth %v->%v op %d sender %v/%v target %v, asker %v", e.Src(), e.Dst(), a.Op(), a.SenderMAC(), a.SenderIP(), a.TargetMAC(), askerMAC)
	}
}

// fuzzIPv6 hands frame to handleIPv6 as the receive path does (parsed,
// Homa left out) and checks an answer built in place.
func fuzzIPv6(t *testing.T, frame []byte, fix bool, nt *neighbourTable[[16]byte], now int64, c *StackCounters) {
	if len(frame) < wire.EthernetHeaderLen+wire.IPv6HeaderLen {
		return
	}
	pkt := frame[wire.EthernetHeaderLen:]
	if fix {
		h := wire.IPv6(pkt)
		h.SetPayloadLength(uint16(len(pkt) - wire.IPv6HeaderLen))
		if m := pkt[wire.IPv6HeaderLen:]; h.NextHeader() == wire.IPProtoICMPv6 && len(m) >= 4 {
			wire.ICMPv6(m).SetChecksum(h.Src(), h.Dst())
		}
	}
	ip, proto, off, r := wire.ParseIPv6(pkt)
	if r != wire.DropNone || wire.HomaUpper(proto, ip[off:]) == wire.DropNone {
		return
	}
	// The answer goes to the asker: its Ethernet source, or for a
	// solicitation the link address it gives (RFC 4861 §7.2.4), or all
	// nodes for duplicate address detection (from the unspecified address).
	src, askerMAC := ip.Src(), wire.Ethernet(frame).Src()
	if m := wire.ParseICMPv6(ip, off); m != nil && m.Type() == wire.ICMPv6NeighborSolicit {
		if mac, ok := m.LinkAddr(wire.NDPOptSourceLinkAddr); ok {
			askerMAC = mac
		}
		if src == ([16]byte{}) {
			src, askerMAC = allNodes, wire.MulticastMAC(allNodes)
		}
	}
	if handleIPv6(frame, ip, proto, off, me6, nt, now, c) != stackReply {
		return
	}
	e := wire.Ethernet(frame)
	if e.Src() != me.mac || e.Dst() != askerMAC || ip.Src() != me6.ip6 || ip.Dst() != src {
		t.Fatalf("IPv6 answer: eth %v->%v ip %v->%v, asker %v at %v", e.Src(), e.Dst(), ip.Src(), ip.Dst(), askerMAC, src)
	}
	end := wire.IPv6HeaderLen + int(ip.PayloadLength())
	if end > len(ip) || end < off {
		t.Fatalf("IPv6 answer: payload length %d in a packet of %d bytes", ip.PayloadLength(), len(ip))
	}
	if m := wire.ICMPv6(ip[off:end]); m.Checksum() != wire.ICMPv6Checksum(ip.Src(), ip.Dst(), m) {
		t.Fatalf("IPv6 answer: ICMPv6 checksum %#04x, want %#04x", m.Checksum(), wire.ICMPv6Checksum(ip.Src(), ip.Dst(), m))
	}
}

// fuzzIPv4 hands an ICMP echo request for us to handleICMP, as the
// receive path does, and checks the answer built in place.
func fuzzIPv4(t *testing.T, frame []byte, fix bool, c *StackCounters) {
	if len(frame) < wire.EthernetHeaderLen+20 {
		return
	}
	pkt := frame[wire.EthernetHeaderLen:]
	if fix {
		h := wire.IPv4(pkt)
		h.SetTotalLength(uint16(len(pkt)))
		if hl := h.HeaderLen(); hl >= 20 && hl <= len(pkt) {
			h.UpdateChecksum()
		}
	}
	ip, r := wire.ParseIPv4(pkt)
	if r == wire.DropNotHoma || r == wire.DropNotHijacked {
		ip, r = wire.IPv4(pkt), wire.DropNone
		ip = ip[:ip.TotalLength()]
	}
	if r != wire.DropNone || ip.Dst() != me.ip || ip.Protocol() != wire.IPProtoICMP ||
		len(ip.Payload()) == 0 || ip.Payload()[0] != wire.ICMPEchoRequest {
		return
	}
	src, askerMAC, size := ip.Src(), wire.Ethernet(frame).Src(), len(frame)
	if handleICMP(frame, ip, me, c) != stackReply {
		return
	}
	e := wire.Ethernet(frame)
	if len(frame) != size || e.Src() != me.mac || e.Dst() != askerMAC || ip.Src() != me.ip || ip.Dst() != src ||
		ip.Checksum() != wire.IPv4HeaderChecksum(ip[:ip.HeaderLen()]) || !wire.ICMP(ip.Payload()).IsValid() {
		t.Fatalf("echo answer: eth %v->%v ip %v->%v, asker %v at %v", e.Src(), e.Dst(), ip.Src(), ip.Dst(), askerMAC, src)
	}
}

// stackSeeds are records of frames the stack tests use: ARP requests and
// replies, a solicitation and advertisements, an echo request, passes.
func stackSeeds(f *testing.F) [][]byte {
	rec := func(ctrl byte, frame []byte) []byte { return append([]byte{ctrl, byte(len(frame))}, frame...) }
	sol := wire.NDPFields{Type: wire.ICMPv6NeighborSolicit, Target: me6.ip6, MAC: peer6.mac}
	adv := wire.NDPFields{Type: wire.ICMPv6NeighborAdvert, Flags: wire.NDPFlagSolicited | wire.NDPFlagOverride, Target: peer6.ip6, MAC: peer6.mac}
	frames := [][]byte{
		rec(0, arpFrame(wire.ARPRequest, peer, wire.BroadcastMAC, me.ip)),
		rec(3, []byte{2}),
		rec(0, arpFrame(wire.ARPReply, peer, me.mac, me.ip)),
		rec(1, v6Frame(peer6, wire.MulticastMAC(wire.SolicitedNode(me6.ip6)), peer6.ip6, wire.SolicitedNode(me6.ip6), 255, ndp(sol, peer6.ip6, wire.SolicitedNode(me6.ip6)))),
		rec(1, v6Frame(peer6, me.mac, peer6.ip6, me6.ip6, 255, ndp(adv, peer6.ip6, me6.ip6))),
		rec(2, echoFrame(f, me.ip, wire.ICMPEchoRequest)),
		rec(3|4<<2, []byte{3}),
	}
	var all []byte
	for _, r := range frames {
		all = append(all, r...)
	}
	return append(frames, all)
}

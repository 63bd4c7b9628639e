package host

import (
	"bytes"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

var (
	me    = hostAddr{ip: [4]byte{10, 0, 0, 1}, mac: wire.MAC{2, 0, 10, 0, 0, 1}}
	peer  = hostAddr{ip: [4]byte{10, 0, 0, 2}, mac: wire.MAC{2, 0, 10, 0, 0, 2}}
	other = [4]byte{10, 0, 0, 9}
)

func arpFrame(op uint16, from hostAddr, dst wire.MAC, target [4]byte) []byte {
	b := make([]byte, 60) // padded to the Ethernet minimum, as on a wire
	eth := wire.EthernetFields{Dst: dst, Src: from.mac, Type: wire.EtherTypeARP}
	n := eth.Encode(b)
	a := wire.ARPFields{Op: op, SenderMAC: from.mac, SenderIP: from.ip, TargetIP: target}
	a.Encode(b[n:])
	return b
}

func TestHandleARP_requestForUsAnsweredInPlace(t *testing.T) {
	nt := newNeighbourTable[[4]byte](100, 1000, 3)
	var c StackCounters
	f := arpFrame(wire.ARPRequest, peer, wire.BroadcastMAC, me.ip)
	if v := handleARP(f, 14, me, nt, 0, &c); v != stackReply {
		t.Fatalf("verdict %v", v)
	}
	e, a := wire.Ethernet(f), wire.ARP(f[14:])
	if e.Dst() != peer.mac || e.Src() != me.mac || a.Op() != wire.ARPReply ||
		a.SenderMAC() != me.mac || a.SenderIP() != me.ip || a.TargetMAC() != peer.mac || a.TargetIP() != peer.ip {
		t.Errorf("reply: eth %v->%v op %d %v/%v -> %v/%v", e.Src(), e.Dst(), a.Op(), a.SenderMAC(), a.SenderIP(), a.TargetMAC(), a.TargetIP())
	}
	if n, _ := nt.Resolve(peer.ip, 1); n.State != engine.LinkReachable || n.MAC != peer.mac {
		t.Error("the requester was not learned")
	}
	if c.ARPRequests != 1 || c.ARPLearned != 1 {
		t.Errorf("counters %+v", c)
	}
}

func TestHandleARP_notForUsAndMalformedDropped(t *testing.T) {
	nt := newNeighbourTable[[4]byte](100, 1000, 3)
	var c StackCounters
	f := arpFrame(wire.ARPRequest, peer, wire.BroadcastMAC, other)
	orig := bytes.Clone(f)
	if v := handleARP(f, 14, me, nt, 0, &c); v != stackDrop || !bytes.Equal(f, orig) {
		t.Errorf("a request for another host: verdict %v, frame changed %v", v, !bytes.Equal(f, orig))
	}
	if n, _ := nt.Resolve(peer.ip, 1); n.State == engine.LinkReachable {
		t.Error("learned from a request for another host")
	}
	if v := handleARP(f[:30], 14, me, nt, 0, &c); v != stackDrop {
		t.Errorf("short ARP: verdict %v", v)
	}
	if c.NotForUs != 1 || c.Malformed != 1 {
		t.Errorf("counters %+v", c)
	}
}

// A reply to our request is learned; one for an address we never asked
// about is discarded, counted.
func TestHandleARP_replyLearned(t *testing.T) {
	nt := newNeighbourTable[[4]byte](100, 1000, 3)
	var c StackCounters
	n, _ := nt.Resolve(peer.ip, 0)
	f := arpFrame(wire.ARPReply, peer, me.mac, me.ip)
	if v := handleARP(f, 14, me, nt, 5, &c); v != stackLearn {
		t.Fatalf("verdict %v", v)
	}
	if n.State != engine.LinkReachable || n.MAC != peer.mac {
		t.Errorf("entry after reply: %+v", *n)
	}
	stranger := hostAddr{ip: other, mac: wire.MAC{2, 0, 0, 0, 0, 9}}
	if v := handleARP(arpFrame(wire.ARPReply, stranger, me.mac, me.ip), 14, me, nt, 6, &c); v != stackLearn {
		t.Fatalf("unsolicited reply: verdict %v", v)
	}
	if len(nt.entries) != 1 || nt.Unsolicited != 1 || c.ARPLearned != 1 || c.ARPReplies != 2 {
		t.Errorf("%d entries, %d unsolicited, counters %+v; want 1, 1", len(nt.entries), nt.Unsolicited, c)
	}
}

func echoFrame(t testing.TB, dst [4]byte, icmpType uint8) []byte {
	t.Helper()
	payload := []byte{icmpType, 0, 0, 0, 0x12, 0x34, 0, 7, 'p', 'i', 'n', 'g'}
	wire.ICMP(payload).UpdateChecksum()
	b := make([]byte, 14+20+len(payload))
	eth := wire.EthernetFields{Dst: me.mac, Src: peer.mac, Type: wire.EtherTypeIPv4}
	n := eth.Encode(b)
	ipf := wire.IPv4Fields{TotalLength: uint16(20 + len(payload)), TTL: 3, Protocol: wire.IPProtoICMP, Src: peer.ip, Dst: dst}
	n += ipf.Encode(b[n:])
	copy(b[n:], payload)
	return b
}

func TestHandleICMP_echoAnsweredInPlace(t *testing.T) {
	var c StackCounters
	f := echoFrame(t, me.ip, wire.ICMPEchoRequest)
	ip := wire.IPv4(f[14:])
	if v := handleICMP(f, ip, me, &c); v != stackReply {
		t.Fatalf("verdict %v", v)
	}
	m := wire.ICMP(ip.Payload())
	if !ip.IsChecksumValid() || ip.Src() != me.ip || ip.Dst() != peer.ip || ip.TTL() != wire.DefaultTTL {
		t.Errorf("IPv4 %v -> %v ttl %d checksum ok %v", ip.Src(), ip.Dst(), ip.TTL(), ip.IsChecksumValid())
	}
	if !m.IsValid() || m.Type() != wire.ICMPEchoReply || m.ID() != 0x1234 || m.Seq() != 7 || string(m[8:]) != "ping" {
		t.Errorf("ICMP % x", []byte(m))
	}
	if e := wire.Ethernet(f); e.Dst() != peer.mac || e.Src() != me.mac {
		t.Errorf("Ethernet %v -> %v", e.Src(), e.Dst())
	}
	if c.EchoRequests != 1 {
		t.Errorf("counters %+v", c)
	}
}

func TestHandleICMP_othersDropped(t *testing.T) {
	var c StackCounters
	f := echoFrame(t, other, wire.ICMPEchoRequest)
	if handleICMP(f, wire.IPv4(f[14:]), me, &c) != stackDrop || c.NotForUs != 1 {
		t.Errorf("echo for another host: %+v", c)
	}
	f = echoFrame(t, me.ip, wire.ICMPEchoReply)
	if handleICMP(f, wire.IPv4(f[14:]), me, &c) != stackDrop || c.Unsupported != 1 {
		t.Errorf("echo reply: %+v", c)
	}
	f = echoFrame(t, me.ip, wire.ICMPEchoRequest)
	f[len(f)-1] ^= 0xff
	if handleICMP(f, wire.IPv4(f[14:]), me, &c) != stackDrop || c.Malformed != 1 {
		t.Errorf("bad checksum: %+v", c)
	}
}

func TestARPRequest_frame(t *testing.T) {
	b := make([]byte, 64)
	n := arpRequest(b, me, peer.ip, false, 0)
	e, a := wire.Ethernet(b), wire.ARP(b[14:n])
	if n != 42 || e.Dst() != wire.BroadcastMAC || e.Type() != wire.EtherTypeARP || a.Op() != wire.ARPRequest ||
		a.TargetIP() != peer.ip || a.SenderIP() != me.ip || a.SenderMAC() != me.mac {
		t.Errorf("request % x", b[:n])
	}
}

func TestARPRequest_taggedFrame(t *testing.T) {
	b := make([]byte, 64)
	n := arpRequest(b, me, peer.ip, true, wire.MakeTCI(7, false, 42))
	v := wire.VLAN(b[14:18])
	if n != 46 || wire.Ethernet(b).Type() != wire.EtherTypeVLAN || v.VID() != 42 || v.PCP() != 7 ||
		v.Type() != wire.EtherTypeARP || !wire.ARP(b[18:n]).IsValid() {
		t.Errorf("tagged request % x", b[:n])
	}
}

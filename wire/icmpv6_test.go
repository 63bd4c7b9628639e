package wire

import (
	"bytes"
	"testing"
)

// Neighbour discovery golden vectors (RFC 4861 layout): 2001:db8::1 (MAC
// 02:00:00:00:00:01) solicits 2001:db8::2 at its solicited-node address,
// and 2001:db8::2 (02:00:00:00:00:02) answers, solicited and override.
// tshark 4.0 decodes both ("Neighbor Solicitation for 2001:db8::2 from
// 02:00:00:00:00:01", "Neighbor Advertisement 2001:db8::2 (sol, ovr) is
// at 02:00:00:00:00:02") and reports their checksums (0x1c27, 0x8a71)
// good.
const (
	goldenNS = `33 33 ff 00 00 02 02 00 00 00 00 01 86 dd
	60 00 00 00 00 20 3a ff 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01
	ff 02 00 00 00 00 00 00 00 00 00 01 ff 00 00 02
	87 00 1c 27 00 00 00 00 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 02 01 01 02 00 00 00 00 01`
	goldenNA = `02 00 00 00 00 01 02 00 00 00 00 02 86 dd
	60 00 00 00 00 20 3a ff 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 02
	20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01
	88 00 8a 71 60 00 00 00 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 02 02 01 02 00 00 00 00 02`
)

// ndpFrame encodes an NDP frame as the golden vectors were made.
func ndpFrame(f NDPFields, src, dst [16]byte, ethDst, ethSrc MAC) []byte {
	b := make([]byte, EthernetHeaderLen+IPv6HeaderLen+NDPMessageLen)
	ef := EthernetFields{Dst: ethDst, Src: ethSrc, Type: EtherTypeIPv6}
	ef.Encode(b)
	ip := IPv6Fields{PayloadLength: NDPMessageLen, NextHeader: IPProtoICMPv6, HopLimit: NDPHopLimit, Src: src, Dst: dst}
	ip.Encode(b[EthernetHeaderLen:])
	f.Encode(b[EthernetHeaderLen+IPv6HeaderLen:], src, dst)
	return b
}

func TestNDP_golden(t *testing.T) {
	mac1, mac2 := MAC{2, 0, 0, 0, 0, 1}, MAC{2, 0, 0, 0, 0, 2}
	sn := SolicitedNode(goldenV6Dst)
	ns := ndpFrame(NDPFields{Type: ICMPv6NeighborSolicit, Target: goldenV6Dst, MAC: mac1}, goldenV6Src, sn, MulticastMAC(sn), mac1)
	na := ndpFrame(NDPFields{Type: ICMPv6NeighborAdvert, Flags: NDPFlagSolicited | NDPFlagOverride, Target: goldenV6Dst, MAC: mac2},
		goldenV6Dst, goldenV6Src, mac1, mac2)
	for _, tc := range []struct {
		name      string
		got, want []byte
		opt       uint8
		mac       MAC
	}{
		{"solicitation", ns, mustHex(t, goldenNS), NDPOptSourceLinkAddr, mac1},
		{"advertisement", na, mustHex(t, goldenNA), NDPOptTargetLinkAddr, mac2},
	} {
		if !bytes.Equal(tc.got, tc.want) {
			t.Errorf("%s:\n% x\nwant\n% x", tc.name, tc.got, tc.want)
		}
		ip, proto, off, r := ParseIPv6(tc.want[EthernetHeaderLen:])
		if r != DropNone || proto != IPProtoICMPv6 {
			t.Fatalf("%s: ParseIPv6 %v, proto %d", tc.name, r, proto)
		}
		m := ParseICMPv6(ip, off)
		if m == nil || m.Target() != goldenV6Dst {
			t.Fatalf("%s: ParseICMPv6 refused it", tc.name)
		}
		if mac, ok := m.LinkAddr(tc.opt); !ok || mac != tc.mac {
			t.Errorf("%s: link address %v %v", tc.name, mac, ok)
		}
	}
	if m := ICMPv6(mustHex(t, goldenNA)[54:]); m.NDPFlags() != NDPFlagSolicited|NDPFlagOverride {
		t.Errorf("flags %#x", m.NDPFlags())
	}
}

func TestParseICMPv6_refuses(t *testing.T) {
	good := func() []byte { return mustHex(t, goldenNS)[EthernetHeaderLen:] }
	fix := func(b []byte) []byte { // checksum again after a change
		ICMPv6(b[IPv6HeaderLen:]).SetChecksum(IPv6(b).Src(), IPv6(b).Dst())
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"routed (hop limit 64)", func() []byte { b := good(); IPv6(b).SetHopLimit(64); return b }()},
		{"bad checksum", func() []byte { b := good(); b[IPv6HeaderLen+30] ^= 1; return b }()},
		{"code 1", func() []byte { b := good(); b[IPv6HeaderLen+1] = 1; return fix(b) }()},
		{"option of length 0", func() []byte { b := good(); b[IPv6HeaderLen+25] = 0; return fix(b) }()},
		{"option past the end", func() []byte { b := good(); b[IPv6HeaderLen+25] = 2; return fix(b) }()},
		{"no target", func() []byte {
			b := good()[:IPv6HeaderLen+20]
			IPv6(b).SetPayloadLength(20)
			return fix(b)
		}()},
	} {
		ip, _, off, r := ParseIPv6(tc.b)
		if r != DropNone {
			t.Fatalf("%s: ParseIPv6 %v", tc.name, r)
		}
		if ParseICMPv6(ip, off) != nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// An echo request's checksum covers the pseudo-header: the reply, with
// addresses swapped and type 129, must be checksummed again.
func TestICMPv6_echoChecksum(t *testing.T) {
	m := ICMPv6([]byte{ICMPv6EchoRequest, 0, 0, 0, 0x12, 0x34, 0, 1, 'p', 'i', 'n', 'g'})
	m.SetChecksum(goldenV6Src, goldenV6Dst)
	if Checksum(m, PseudoSumIPv6(goldenV6Src, goldenV6Dst, IPProtoICMPv6, len(m))) != 0xffff {
		t.Fatal("request checksum wrong")
	}
	m[0] = ICMPv6EchoReply
	m.SetChecksum(goldenV6Dst, goldenV6Src)
	if Checksum(m, PseudoSumIPv6(goldenV6Dst, goldenV6Src, IPProtoICMPv6, len(m))) != 0xffff || m.ID() != 0x1234 || m.Seq() != 1 {
		t.Fatal("reply checksum wrong")
	}
}

// LinkAddr on a message nobody validated stops at a bad option.
func TestICMPv6_linkAddrOfMalformedOptions(t *testing.T) {
	m := ICMPv6(mustHex(t, goldenNS)[EthernetHeaderLen+IPv6HeaderLen:])
	for _, l := range []byte{0, 2, 255} {
		m[25] = l
		if _, ok := m.LinkAddr(NDPOptSourceLinkAddr); ok {
			t.Errorf("option length %d: found an address", l)
		}
	}
	if _, ok := ICMPv6(m[:10]).LinkAddr(NDPOptSourceLinkAddr); ok {
		t.Error("a short message has an address")
	}
}

func TestSolicitedNodeAndMulticastMAC(t *testing.T) {
	a := [16]byte{0x20, 0x01, 0x0d, 0xb8, 13: 0xab, 14: 0xcd, 15: 0xef}
	sn := SolicitedNode(a)
	if want := [16]byte{0xff, 0x02, 11: 1, 12: 0xff, 13: 0xab, 14: 0xcd, 15: 0xef}; sn != want || !IsMulticast6(sn) || IsMulticast6(a) {
		t.Errorf("SolicitedNode = % x", sn)
	}
	if m := MulticastMAC(sn); m != (MAC{0x33, 0x33, 0xff, 0xab, 0xcd, 0xef}) {
		t.Errorf("MulticastMAC = %v", m)
	}
}

func FuzzParseICMPv6(f *testing.F) {
	f.Add(mustHex(f, goldenNS)[EthernetHeaderLen:])
	f.Add(mustHex(f, goldenNA)[EthernetHeaderLen:])
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, proto, off, r := ParseIPv6(b)
		if r != DropNone || proto != IPProtoICMPv6 {
			return
		}
		m := ParseICMPv6(ip, off)
		if m == nil {
			return
		}
		if t := m.Type(); t == ICMPv6NeighborSolicit || t == ICMPv6NeighborAdvert {
			m.Target()
		}
		m.LinkAddr(NDPOptSourceLinkAddr) // whatever the type: never loops or reads past the end
		m.LinkAddr(NDPOptTargetLinkAddr)
	})
}

package wire

import (
	"bytes"
	"testing"
)

// IPv6 golden vectors, from docs/wire.md#framing (next header 146,
// traffic class p<<5) and its DATA and GRANT vectors (#golden-vectors): the fixed header of the
// golden DATA packet (56 bytes, no message bytes) at priority 5 from
// 2001:db8::1 to 2001:db8::2, and of the golden GRANT (33 bytes) at
// priority 7 back.
const (
	goldenIPv6Data = `6a 00 00 00 00 38 92 40
	20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01
	20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 02`
	goldenIPv6Grant = `6e 00 00 00 00 21 92 40
	20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 02
	20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01`
)

func TestIPv6_golden(t *testing.T) {
	for _, tc := range []struct {
		name     string
		f        IPv6Fields
		want     string
		homaLen  int
		priority uint8
	}{
		{"DATA", HomaIPv6Fields(goldenV6Src, goldenV6Dst, 5, DataHeaderLen), goldenIPv6Data, DataHeaderLen, 5},
		{"GRANT", HomaIPv6Fields(goldenV6Dst, goldenV6Src, 7, GrantHeaderLen), goldenIPv6Grant, GrantHeaderLen, 7},
	} {
		want := mustHex(t, tc.want)
		b := bytes.Repeat([]byte{0xAA}, IPv6HeaderLen)
		if n := tc.f.Encode(b); n != IPv6HeaderLen || !bytes.Equal(b, want) {
			t.Errorf("%s: Encode = %d\n% x\nwant\n% x", tc.name, n, b, want)
		}
		ip := IPv6(want)
		if ip.Version() != 6 || ip.Priority() != tc.priority || ip.NextHeader() != IPProtoHoma ||
			int(ip.PayloadLength()) != tc.homaLen || ip.HopLimit() != DefaultHopLimit || ip.Fields() != tc.f {
			t.Errorf("%s: read back %+v", tc.name, ip.Fields())
		}
	}
}

func TestIPv6_setters(t *testing.T) {
	f := IPv6Fields{TrafficClass: 0x1f, FlowLabel: 0xabcde, PayloadLength: 9, NextHeader: 17, HopLimit: 3, Src: goldenV6Src, Dst: goldenV6Dst}
	b := make([]byte, IPv6HeaderLen)
	f.Encode(b)
	ip := IPv6(b)
	ip.SetTrafficClass(TOSFromPriority(6))
	if ip.TrafficClass() != 0xc0 || ip.FlowLabel() != 0xabcde || ip.Version() != 6 || ip.Priority() != 6 {
		t.Errorf("after SetTrafficClass: %+v", ip.Fields())
	}
}

// v6packet returns an IPv6 packet whose fixed header is followed by the
// extension headers ext (each: next header, length byte, padding to its
// size) and then a Homa GRANT.
func v6packet(_ testing.TB, first uint8, ext ...[]byte) []byte {
	var body []byte
	for _, e := range ext {
		body = append(body, e...)
	}
	body = append(body, sampleHoma(TypeGrant)...)
	f := HomaIPv6Fields(goldenV6Src, goldenV6Dst, 3, len(body))
	f.NextHeader = first
	b := make([]byte, IPv6HeaderLen)
	f.Encode(b)
	return append(b, body...)
}

// ext returns an extension header of 8*(1+units) bytes naming next.
func ext(next uint8, units int) []byte {
	e := make([]byte, 8*(1+units))
	e[0], e[1] = next, byte(units)
	return e
}

func TestParseIPv6(t *testing.T) {
	for _, tc := range []struct {
		name  string
		b     []byte
		want  DropReason
		proto uint8
		off   int
	}{
		{"plain", v6packet(t, IPProtoHoma), DropNone, IPProtoHoma, 40},
		{"hop-by-hop, destination options", v6packet(t, IPv6HopByHop, ext(IPv6DestOpts, 0), ext(IPProtoHoma, 1)), DropNone, IPProtoHoma, 40 + 8 + 16},
		{"routing", v6packet(t, IPv6Routing, ext(IPProtoHoma, 2)), DropNone, IPProtoHoma, 40 + 24},
		{"four extensions", v6packet(t, IPv6DestOpts, ext(IPv6DestOpts, 0), ext(IPv6DestOpts, 0), ext(IPv6DestOpts, 0), ext(IPProtoHoma, 0)), DropNone, IPProtoHoma, 40 + 32},
		{"five extensions", v6packet(t, IPv6DestOpts, ext(IPv6DestOpts, 0), ext(IPv6DestOpts, 0), ext(IPv6DestOpts, 0), ext(IPv6DestOpts, 0), ext(IPProtoHoma, 0)), DropIPv6ExtHeader, 0, 0},
		{"fragment", v6packet(t, IPv6HopByHop, ext(IPv6Fragment, 0), ext(IPProtoHoma, 0)), DropIPFragment, 0, 0},
		{"extension past the end", func() []byte { b := v6packet(t, IPv6DestOpts, ext(IPProtoHoma, 0)); b[41] = 200; return b }(), DropIPv6ExtHeader, 0, 0},
		{"extension header cut off", func() []byte { b := v6packet(t, IPv6DestOpts); IPv6(b).SetPayloadLength(4); return b[:44] }(), DropIPv6ExtHeader, 0, 0},
		{"ESP is the upper layer", v6packet(t, 50), DropNone, 50, 40},
		{"short", v6packet(t, IPProtoHoma)[:36], DropShortIPHeader, 0, 0},
		{"version 4", func() []byte { b := v6packet(t, IPProtoHoma); b[0] = 0x4a; return b }(), DropBadIPVersion, 0, 0},
		{"jumbogram", func() []byte { b := v6packet(t, IPProtoHoma); IPv6(b).SetPayloadLength(0); return b }(), DropBadTotalLength, 0, 0},
		{"payload past the end", func() []byte { b := v6packet(t, IPProtoHoma); IPv6(b).SetPayloadLength(100); return b }(), DropBadTotalLength, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ip, proto, off, r := ParseIPv6(append(tc.b, 0, 0, 0)) // link padding
			if r != tc.want || proto != tc.proto || off != tc.off {
				t.Fatalf("ParseIPv6 = %v, proto %d, off %d; want %v, %d, %d", r, proto, off, tc.want, tc.proto, tc.off)
			}
			if r == DropNone && len(ip) != len(tc.b) {
				t.Errorf("view of %d bytes, want %d (padding cut)", len(ip), len(tc.b))
			}
		})
	}
}

func TestMapIPv4(t *testing.T) {
	m := MapIPv4([4]byte{192, 0, 2, 7})
	if want := [16]byte{10: 0xff, 11: 0xff, 12: 192, 13: 0, 14: 2, 15: 7}; m != want {
		t.Errorf("MapIPv4 = % x", m)
	}
	if a, ok := UnmapIPv4(m); !ok || a != [4]byte{192, 0, 2, 7} {
		t.Errorf("UnmapIPv4 = %v %v", a, ok)
	}
	if _, ok := UnmapIPv4(goldenV6Src); ok {
		t.Error("2001:db8::1 unmapped")
	}
}

func TestParseIPv6_noAllocs(t *testing.T) {
	b := v6packet(t, IPv6HopByHop, ext(IPProtoHoma, 0))
	if n := testing.AllocsPerRun(100, func() { ParseIPv6(b) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// v6frame is an Ethernet frame carrying homa over IPv6 (next header proto)
// at priority 5, from goldenV6Src to goldenV6Dst.
func v6frame(homa []byte, proto uint8) []byte {
	b := make([]byte, EthernetHeaderLen+IPv6HeaderLen)
	ef := EthernetFields{Dst: testMAC2, Src: testMAC1, Type: EtherTypeIPv6}
	ef.Encode(b)
	f := HomaIPv6Fields(goldenV6Src, goldenV6Dst, 5, len(homa))
	f.NextHeader = proto
	f.Encode(b[EthernetHeaderLen:])
	return append(b, homa...)
}

func TestParseHomaIP_ipv6(t *testing.T) {
	data := append(mustHex(t, goldenData), "message"...)
	parse := func(b []byte) (Frame, DropReason) {
		var l Link
		var f Frame
		ParseLink(b, &l)
		return f, ParseHomaIP(&l, &f, true)
	}
	f, r := parse(append(v6frame(data, IPProtoHoma), 0, 0)) // link padding
	if r != DropNone || f.Type != TypeData || f.IPv4 != nil || f.IPv6 == nil || string(f.Payload) != "message" ||
		f.Src() != goldenV6Src || f.Dst() != goldenV6Dst || f.Priority() != 5 || f.Hijacked || f.Len() != len(v6frame(data, IPProtoHoma)) {
		t.Fatalf("IPv6 DATA: %v, %+v", r, f)
	}
	c := f.Clone()
	if c.IPv6 == nil || c.Type != TypeData || string(c.Payload) != "message" || &c.Homa[0] == &f.Homa[0] {
		t.Errorf("Clone: %+v", c)
	}
	if f, r := parse(v6frame(data, IPProtoTCP)); r != DropNone || !f.Hijacked {
		t.Errorf("hijacked over IPv6: %v %v", r, f.Hijacked)
	}
	notHijacked := append([]byte(nil), data...)
	Common(notHijacked).SetUrgent(0)
	for _, tc := range []struct {
		name string
		b    []byte
		want DropReason
	}{
		{"UDP", v6frame(data, 17), DropNotHoma},
		{"TCP, not hijacked", v6frame(notHijacked, IPProtoTCP), DropNotHijacked},
		{"short Homa", v6frame(data[:40], IPProtoHoma), DropShortHomaHeader},
		{"fragment", v6frame(append(ext(IPProtoHoma, 0), data...), IPv6Fragment), DropIPFragment},
	} {
		if f, r := parse(tc.b); r != tc.want || f.Type != 0 || f.IPv6 != nil {
			t.Errorf("%s: %v, want %v (frame %+v)", tc.name, r, tc.want, f)
		}
	}
	// An IPv4 frame parses as before, its addresses mapped.
	f, r = parse(homaFrame(t, mustHex(t, goldenGrant)))
	if r != DropNone || f.IPv4 == nil || f.IPv6 != nil || f.Src() != MapIPv4(f.IPv4.Src()) {
		t.Errorf("IPv4 through ParseHomaIP: %v %+v", r, f)
	}
}

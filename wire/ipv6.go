package wire

import "encoding/binary"

// IPv6 as Homa uses it: next header 146 (or 6 for TCP-hijacked packets),
// the priority in the top three bits of the traffic class (p << 5, as the
// kernel module writes it), no fragmentation. Kernel Homa holds every
// address as IPv6, IPv4 ones mapped (::ffff:a.b.c.d).
const (
	// IPv6HeaderLen is the length of the fixed IPv6 header.
	IPv6HeaderLen = 40

	// The extension headers a receiver walks past (RFC 8200 §4): their
	// length byte counts 8-byte units beyond the first 8.
	IPv6HopByHop = 0
	IPv6Routing  = 43
	IPv6DestOpts = 60

	// IPv6Fragment is the fragment header: Homa sets no fragments (as
	// DF in IPv4), so a packet carrying one is dropped (DropIPFragment).
	IPv6Fragment = 44

	// IPv6NoNext is "no next header".
	IPv6NoNext = 59

	// IPProtoICMPv6 is the next header of ICMPv6 (RFC 4443).
	IPProtoICMPv6 = 58

	// MaxIPv6ExtHeaders is how many extension headers ParseIPv6 walks
	// before it gives up (DropIPv6ExtHeader): a bound on the work one
	// packet can ask for.
	MaxIPv6ExtHeaders = 4

	// DefaultHopLimit is the hop limit HomaIPv6Fields uses (Linux's
	// default, as DefaultTTL for IPv4).
	DefaultHopLimit = 64
)

// Offsets within the fixed IPv6 header.
const (
	ip6VerTCFlow = 0 // 4 bits version, 8 bits traffic class, 20 bits flow label
	ip6PayLen    = 4
	ip6Next      = 6
	ip6HopLimit  = 7
	ip6Src       = 8
	ip6Dst       = 24
)

// IPv6 is a view of an IPv6 packet: the fixed header, any extension
// headers and the payload; when it was produced by ParseIPv6, exactly
// 40 + PayloadLength bytes (link padding cut off). Accessors alias the
// underlying bytes.
type IPv6 []byte

// Version returns the version field (6 for IPv6).
func (b IPv6) Version() uint8 { return b[ip6VerTCFlow] >> 4 }

// TrafficClass returns the traffic class byte.
func (b IPv6) TrafficClass() uint8 {
	return uint8(binary.BigEndian.Uint16(b[ip6VerTCFlow:]) >> 4)
}

// Priority returns the Homa priority in the traffic class's top 3 bits.
func (b IPv6) Priority() uint8 { return PriorityFromTOS(b.TrafficClass()) }

// FlowLabel returns the 20-bit flow label.
func (b IPv6) FlowLabel() uint32 { return binary.BigEndian.Uint32(b[ip6VerTCFlow:]) & 0xfffff }

// PayloadLength returns the bytes after the fixed header (extension
// headers included).
func (b IPv6) PayloadLength() uint16 { return binary.BigEndian.Uint16(b[ip6PayLen:]) }

// NextHeader returns the fixed header's next header.
func (b IPv6) NextHeader() uint8 { return b[ip6Next] }

// HopLimit returns the hop limit.
func (b IPv6) HopLimit() uint8 { return b[ip6HopLimit] }

// Src returns the source address.
func (b IPv6) Src() [16]byte { return [16]byte(b[ip6Src : ip6Src+16]) }

// Dst returns the destination address.
func (b IPv6) Dst() [16]byte { return [16]byte(b[ip6Dst : ip6Dst+16]) }

// SetTrafficClass sets the traffic class, keeping version and flow label.
func (b IPv6) SetTrafficClass(tc uint8) {
	v := binary.BigEndian.Uint32(b[ip6VerTCFlow:])
	binary.BigEndian.PutUint32(b[ip6VerTCFlow:], v&^(0xff<<20)|uint32(tc)<<20)
}

// SetPayloadLength sets the payload length.
func (b IPv6) SetPayloadLength(n uint16) { binary.BigEndian.PutUint16(b[ip6PayLen:], n) }

// SetNextHeader sets the fixed header's next header.
func (b IPv6) SetNextHeader(p uint8) { b[ip6Next] = p }

// SetHopLimit sets the hop limit.
func (b IPv6) SetHopLimit(h uint8) { b[ip6HopLimit] = h }

// SetSrc sets the source address.
func (b IPv6) SetSrc(a [16]byte) { copy(b[ip6Src:ip6Src+16], a[:]) }

// SetDst sets the destination address.
func (b IPv6) SetDst(a [16]byte) { copy(b[ip6Dst:ip6Dst+16], a[:]) }

// IPv6Fields describes a fixed IPv6 header (no extension headers), for
// Encode.
type IPv6Fields struct {
	TrafficClass  uint8  // priority << 5 for Homa
	FlowLabel     uint32 // 20 bits
	PayloadLength uint16 // Homa header + data, in bytes
	NextHeader    uint8  // IPProtoHoma (or IPProtoTCP when hijacked)
	HopLimit      uint8
	Src, Dst      [16]byte
}

// HomaIPv6Fields returns the fields of the IPv6 header of a Homa packet
// of homaLen bytes sent at priority p: next header 146, hop limit 64,
// traffic class p<<5, flow label 0.
func HomaIPv6Fields(src, dst [16]byte, p uint8, homaLen int) IPv6Fields {
	return IPv6Fields{TrafficClass: TOSFromPriority(p), PayloadLength: uint16(homaLen),
		NextHeader: IPProtoHoma, HopLimit: DefaultHopLimit, Src: src, Dst: dst}
}

// Encode writes the 40-byte fixed header into b and returns 40, or 0
// (writing nothing) if b is shorter.
func (f *IPv6Fields) Encode(b []byte) int {
	if len(b) < IPv6HeaderLen {
		return 0
	}
	h := IPv6(b[:IPv6HeaderLen])
	binary.BigEndian.PutUint32(h[ip6VerTCFlow:], 6<<28|uint32(f.TrafficClass)<<20|f.FlowLabel&0xfffff)
	h.SetPayloadLength(f.PayloadLength)
	h.SetNextHeader(f.NextHeader)
	h.SetHopLimit(f.HopLimit)
	h.SetSrc(f.Src)
	h.SetDst(f.Dst)
	return IPv6HeaderLen
}

// Fields returns the fixed header's fields.
func (b IPv6) Fields() IPv6Fields {
	return IPv6Fields{TrafficClass: b.TrafficClass(), FlowLabel: b.FlowLabel(), PayloadLength: b.PayloadLength(),
		NextHeader: b.NextHeader(), HopLimit: b.HopLimit(), Src: b.Src(), Dst: b.Dst()}
}

// ParseIPv6 validates an IPv6 packet and walks its extension headers:
// at least 40 bytes, version 6, a payload length that fits in b (0, a
// jumbogram, is refused), hop-by-hop, routing and destination options
// headers skipped (at most MaxIPv6ExtHeaders of them, each inside the
// payload), a fragment header refused (DropIPFragment), any other
// extension (AH, ESP, no next header, mobility, ...) taken as the upper
// layer. b may run past the packet (link padding). On success it returns
// the packet (exactly 40 + PayloadLength bytes), the upper layer's
// protocol number and the offset of its header in the packet; otherwise
// the reason. It does not allocate.
func ParseIPv6(b []byte) (ip IPv6, proto uint8, off int, r DropReason) {
	switch {
	case len(b) < IPv6HeaderLen:
		return nil, 0, 0, DropShortIPHeader
	case b[0]>>4 != 6:
		return nil, 0, 0, DropBadIPVersion
	}
	ip = IPv6(b)
	n := int(ip.PayloadLength())
	if n == 0 || IPv6HeaderLen+n > len(b) {
		return nil, 0, 0, DropBadTotalLength
	}
	ip = ip[:IPv6HeaderLen+n]
	proto, off = ip.NextHeader(), IPv6HeaderLen
	for range MaxIPv6ExtHeaders + 1 {
		switch proto {
		case IPv6HopByHop, IPv6Routing, IPv6DestOpts:
		case IPv6Fragment:
			return nil, 0, 0, DropIPFragment
		default:
			return ip, proto, off, DropNone
		}
		if off+8 > len(ip) {
			return nil, 0, 0, DropIPv6ExtHeader
		}
		next, l := ip[off], (int(ip[off+1])+1)*8
		if off+l > len(ip) {
			return nil, 0, 0, DropIPv6ExtHeader
		}
		proto, off = next, off+l
	}
	return nil, 0, 0, DropIPv6ExtHeader // too many
}

// MapIPv4 returns a as an IPv4-mapped IPv6 address, ::ffff:a.b.c.d, the
// form kernel Homa holds IPv4 peers in.
func MapIPv4(a [4]byte) [16]byte {
	return [16]byte{10: 0xff, 11: 0xff, 12: a[0], 13: a[1], 14: a[2], 15: a[3]}
}

// UnmapIPv4 returns the IPv4 address of an IPv4-mapped IPv6 address and
// true, or false when a is not one.
func UnmapIPv4(a [16]byte) ([4]byte, bool) {
	if [12]byte(a[:12]) != [12]byte{10: 0xff, 11: 0xff} {
		return [4]byte{}, false
	}
	return [4]byte(a[12:]), true
}

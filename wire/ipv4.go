package wire

import "encoding/binary"

// IPv4 as Homa uses it: protocol 146, DF set, the priority in the top three
// bits of TOS, a valid header checksum.
const (
	// IPv4MinHeaderLen is the length of an IPv4 header without options
	// (IHL 5). Homa senders never add options; receivers skip them.
	IPv4MinHeaderLen = 20

	// IPv4MaxHeaderLen is the length of an IPv4 header with IHL 15.
	IPv4MaxHeaderLen = 60

	// IPProtoHoma is the IANA protocol number of Homa (IPPROTO_HOMA).
	IPProtoHoma = 146

	// IPv4FlagDF is the don't-fragment bit of IPv4Fields.Flags. Homa
	// sets it.
	IPv4FlagDF = 0x2

	// IPv4FlagMF is the more-fragments bit of IPv4Fields.Flags.
	IPv4FlagMF = 0x1

	// DefaultTTL is the TTL HomaIPv4Fields uses (Linux's default).
	DefaultTTL = 64
)

// Offsets within an IPv4 header.
const (
	ipVerIHL   = 0
	ipTOS      = 1
	ipTotalLen = 2
	ipID       = 4
	ipFlagsOff = 6 // 3 bits of flags, 13 bits of fragment offset (8-byte units)
	ipTTL      = 8
	ipProtocol = 9
	ipChecksum = 10
	ipSrc      = 12
	ipDst      = 16
)

// IPv4 is a view of an IPv4 packet: the header (with any options) and,
// when it was produced by ParseFrame or ParseIPv4, exactly TotalLength
// bytes (link-layer padding cut off). Accessors alias the underlying
// bytes; they are valid only as long as those bytes are. Check IsValid (or
// use ParseIPv4) before reading fields of bytes from the wire.
type IPv4 []byte

// IsValid reports whether b holds a structurally sound IPv4 header: at
// least 20 bytes, version 4, IHL ≥ 5, the whole header present, and a total
// length that covers the header and fits in b. It does not check the
// checksum (IsChecksumValid) or the protocol.
func (b IPv4) IsValid() bool { return b.validate() == DropNone }

// validate returns the first structural problem of b, in the order
// ParseIPv4 reports them.
func (b IPv4) validate() DropReason { return b.validateSpan(len(b)) }

// validateSpan is validate for a packet of span bytes whose first len(b)
// are in b: the header must be in b, the total length within span.
func (b IPv4) validateSpan(span int) DropReason {
	if len(b) < IPv4MinHeaderLen {
		return DropShortIPHeader
	}
	if b.Version() != 4 {
		return DropBadIPVersion
	}
	hl := b.HeaderLen()
	if hl < IPv4MinHeaderLen {
		return DropBadIHL
	}
	if hl > len(b) {
		return DropShortIPHeader
	}
	if tl := int(b.TotalLength()); tl < hl || tl > span {
		return DropBadTotalLength
	}
	return DropNone
}

// Version returns the IP version field (4 for IPv4).
func (b IPv4) Version() uint8 { return b[ipVerIHL] >> 4 }

// HeaderLen returns the header length in bytes (IHL × 4), options included.
func (b IPv4) HeaderLen() int { return int(b[ipVerIHL]&0xf) * 4 }

// TOS returns the type-of-service byte.
func (b IPv4) TOS() uint8 { return b[ipTOS] }

// Priority returns the Homa priority carried in the TOS byte.
func (b IPv4) Priority() uint8 { return PriorityFromTOS(b[ipTOS]) }

// TotalLength returns the length of header plus payload in bytes.
func (b IPv4) TotalLength() uint16 { return binary.BigEndian.Uint16(b[ipTotalLen:]) }

// ID returns the identification field.
func (b IPv4) ID() uint16 { return binary.BigEndian.Uint16(b[ipID:]) }

// Flags returns the three flag bits (reserved, DF, MF) as IPv4Flag* bits.
func (b IPv4) Flags() uint8 { return b[ipFlagsOff] >> 5 }

// FragmentOffset returns the fragment offset in 8-byte units.
func (b IPv4) FragmentOffset() uint16 {
	return binary.BigEndian.Uint16(b[ipFlagsOff:]) & 0x1fff
}

// IsFragment reports whether b is part of a fragmented datagram (MF set or
// a non-zero fragment offset). Homa never fragments.
func (b IPv4) IsFragment() bool {
	return binary.BigEndian.Uint16(b[ipFlagsOff:])&0x3fff != 0
}

// TTL returns the time-to-live.
func (b IPv4) TTL() uint8 { return b[ipTTL] }

// Protocol returns the protocol number (IPProtoHoma for Homa).
func (b IPv4) Protocol() uint8 { return b[ipProtocol] }

// Checksum returns the header checksum field.
func (b IPv4) Checksum() uint16 { return binary.BigEndian.Uint16(b[ipChecksum:]) }

// Src returns the source address.
func (b IPv4) Src() [4]byte { return [4]byte(b[ipSrc : ipSrc+4]) }

// Dst returns the destination address.
func (b IPv4) Dst() [4]byte { return [4]byte(b[ipDst : ipDst+4]) }

// Options returns the option bytes (empty for IHL 5).
func (b IPv4) Options() []byte { return b[IPv4MinHeaderLen:b.HeaderLen()] }

// Payload returns the bytes after the header up to TotalLength. It aliases
// b; valid only if IsValid.
func (b IPv4) Payload() []byte { return b[b.HeaderLen():b.TotalLength()] }

// SetTOS sets the TOS byte. The checksum is not updated; call
// UpdateChecksum afterwards (or let the NIC compute it).
func (b IPv4) SetTOS(tos uint8) { b[ipTOS] = tos }

// SetTotalLength sets the total length. The checksum is not updated.
func (b IPv4) SetTotalLength(n uint16) { binary.BigEndian.PutUint16(b[ipTotalLen:], n) }

// SetID sets the identification field. The checksum is not updated.
func (b IPv4) SetID(id uint16) { binary.BigEndian.PutUint16(b[ipID:], id) }

// SetTTL sets the time-to-live. The checksum is not updated.
func (b IPv4) SetTTL(ttl uint8) { b[ipTTL] = ttl }

// SetSrc sets the source address. The checksum is not updated.
func (b IPv4) SetSrc(a [4]byte) { copy(b[ipSrc:ipSrc+4], a[:]) }

// SetDst sets the destination address. The checksum is not updated.
func (b IPv4) SetDst(a [4]byte) { copy(b[ipDst:ipDst+4], a[:]) }

// SetChecksum sets the header checksum field.
func (b IPv4) SetChecksum(c uint16) { binary.BigEndian.PutUint16(b[ipChecksum:], c) }

// UpdateChecksum recomputes the header checksum over HeaderLen bytes and
// stores it.
func (b IPv4) UpdateChecksum() { b.SetChecksum(IPv4HeaderChecksum(b[:b.HeaderLen()])) }

// IsChecksumValid reports whether the header checksum (over HeaderLen
// bytes, options included) is correct. b must be valid (IsValid).
func (b IPv4) IsChecksumValid() bool {
	return Checksum(b[:b.HeaderLen()], 0) == 0xffff
}

// IPv4Fields describes an IPv4 header without options, for Encode. Every
// field is written as given; HomaIPv4Fields fills in Homa's values.
type IPv4Fields struct {
	TOS         uint8  // priority << 5 for Homa; see TOSFromPriority
	TotalLength uint16 // header (20) + Homa header + data, in bytes
	ID          uint16
	Flags       uint8  // IPv4FlagDF and/or IPv4FlagMF (3 bits)
	FragOffset  uint16 // in 8-byte units (13 bits)
	TTL         uint8
	Protocol    uint8 // IPProtoHoma for Homa
	Src, Dst    [4]byte

	// NoChecksum leaves the checksum field 0 for the NIC to fill in (TX
	// checksum offload). Otherwise Encode computes it.
	NoChecksum bool
}

// HomaIPv4Fields returns the fields of the IPv4 header of a Homa packet
// of homaLen bytes (Homa header + data) sent at priority p: protocol 146,
// DF set, TTL 64, TOS p<<5, total length 20+homaLen.
func HomaIPv4Fields(src, dst [4]byte, p uint8, homaLen int) IPv4Fields {
	return IPv4Fields{
		TOS:         TOSFromPriority(p),
		TotalLength: uint16(IPv4MinHeaderLen + homaLen),
		Flags:       IPv4FlagDF,
		TTL:         DefaultTTL,
		Protocol:    IPProtoHoma,
		Src:         src,
		Dst:         dst,
	}
}

// Encode writes a 20-byte IPv4 header into b and returns 20, or 0 (writing
// nothing) if b is shorter than 20 bytes.
func (f *IPv4Fields) Encode(b []byte) int {
	if len(b) < IPv4MinHeaderLen {
		return 0
	}
	h := IPv4(b[:IPv4MinHeaderLen])
	h[ipVerIHL] = 4<<4 | IPv4MinHeaderLen/4
	h[ipTOS] = f.TOS
	h.SetTotalLength(f.TotalLength)
	h.SetID(f.ID)
	binary.BigEndian.PutUint16(h[ipFlagsOff:], uint16(f.Flags&7)<<13|f.FragOffset&0x1fff)
	h[ipTTL] = f.TTL
	h[ipProtocol] = f.Protocol
	h.SetSrc(f.Src)
	h.SetDst(f.Dst)
	h.SetChecksum(0)
	if !f.NoChecksum {
		h.SetChecksum(IPv4HeaderChecksum(h))
	}
	return IPv4MinHeaderLen
}

// Fields returns the header's fields. Options are not included, so
// re-encoding a header with IHL > 5 does not reproduce it. NoChecksum is
// set when the checksum field is 0 although the computed checksum is not
// (a header whose correct checksum is 0 reports false). A wrong non-zero
// checksum cannot be expressed: re-encoding corrects it. Nor can 0xffff
// where 0 is correct (both are one's-complement zero and pass
// IsChecksumValid, as in Linux): re-encoding writes 0.
func (b IPv4) Fields() IPv4Fields {
	return IPv4Fields{
		TOS:         b.TOS(),
		TotalLength: b.TotalLength(),
		ID:          b.ID(),
		Flags:       b.Flags(),
		FragOffset:  b.FragmentOffset(),
		TTL:         b.TTL(),
		Protocol:    b.Protocol(),
		Src:         b.Src(),
		Dst:         b.Dst(),
		NoChecksum:  b.Checksum() == 0 && IPv4HeaderChecksum(b[:IPv4MinHeaderLen]) != 0,
	}
}

// Checksum returns the 16-bit one's-complement sum of b (RFC 1071), added
// to initial and folded, not complemented. An odd final byte is padded
// with a zero byte. A header whose checksum field is correct sums to
// 0xffff.
func Checksum(b []byte, initial uint16) uint16 {
	s := uint64(initial)
	for len(b) >= 8 {
		s += uint64(binary.BigEndian.Uint32(b))
		s += uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// IPv4HeaderChecksum returns the checksum to store in the IPv4 header hdr
// (IHL × 4 bytes, options included), computed as if the checksum field
// were zero. hdr must be at least 20 bytes.
func IPv4HeaderChecksum(hdr []byte) uint16 {
	return ^Checksum(hdr[ipChecksum+2:], Checksum(hdr[:ipChecksum], 0))
}

// PriorityFromTOS returns the Homa priority (0..7) carried in the top
// three bits of an IPv4 TOS byte: TOS 0xa0 is priority 5.
func PriorityFromTOS(tos uint8) uint8 { return tos >> 5 }

// TOSFromPriority returns the TOS byte for Homa priority p: p << 5. p is
// taken modulo 8.
func TOSFromPriority(p uint8) uint8 { return (p & 7) << 5 }

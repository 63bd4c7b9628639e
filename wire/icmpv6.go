package wire

import "encoding/binary"

// ICMPv6 (RFC 4443) and neighbour discovery (RFC 4861): what an IPv6 host
// must answer so that ping -6 works and neighbours find its link address,
// as ARP and ICMP echo do for IPv4.
const (
	// ICMPv6DestUnreachable is ICMPv6's destination unreachable;
	// ICMPv6PortUnreachable its code for a port with no listener, which
	// kernel Homa sends for a packet to an unbound port
	// (homa_err_handler_v6 turns it into ENOTCONN).
	ICMPv6DestUnreachable = 1
	ICMPv6PortUnreachable = 4

	// ICMPv6ErrorQuoteLen is what an error here quotes of the packet it
	// is about, after its header: the IPv6 header and the first 8 bytes
	// of its payload (for Homa: sport, dport and sequence).
	ICMPv6ErrorQuoteLen = IPv6HeaderLen + 8

	ICMPv6EchoRequest     = 128
	ICMPv6EchoReply       = 129
	ICMPv6NeighborSolicit = 135
	ICMPv6NeighborAdvert  = 136

	// ICMPv6HeaderLen is type, code and checksum, and the 4 bytes every
	// message here has next (echo: identifier and sequence; neighbour
	// discovery: reserved, or an advertisement's flags).
	ICMPv6HeaderLen = 8

	// NDPLen is the length of a solicitation or advertisement without
	// options: the header and the target address.
	NDPLen = ICMPv6HeaderLen + 16

	// NDP options carrying a link-layer address (8 bytes for Ethernet).
	NDPOptSourceLinkAddr = 1
	NDPOptTargetLinkAddr = 2

	// NDPHopLimit is the hop limit every neighbour discovery message is
	// sent with and must arrive with (RFC 4861 §7.1): one from off the
	// link has been routed and is dropped.
	NDPHopLimit = 255

	// Neighbour advertisement flags (the top bits of the byte after the
	// checksum).
	NDPFlagRouter    = 0x80
	NDPFlagSolicited = 0x40
	NDPFlagOverride  = 0x20
)

// ICMPv6 is a view of an ICMPv6 message (the IPv6 payload).
type ICMPv6 []byte

// Type returns the message type.
func (m ICMPv6) Type() uint8 { return m[0] }

// Code returns the code.
func (m ICMPv6) Code() uint8 { return m[1] }

// Checksum returns the checksum field.
func (m ICMPv6) Checksum() uint16 { return binary.BigEndian.Uint16(m[2:]) }

// ID and Seq are an echo's identifier and sequence number.
func (m ICMPv6) ID() uint16  { return binary.BigEndian.Uint16(m[4:]) }
func (m ICMPv6) Seq() uint16 { return binary.BigEndian.Uint16(m[6:]) }

// Target returns a neighbour solicitation's or advertisement's target
// address (m must be at least NDPLen bytes).
func (m ICMPv6) Target() [16]byte { return [16]byte(m[8:24]) }

// NDPFlags returns an advertisement's flags byte.
func (m ICMPv6) NDPFlags() uint8 { return m[4] }

// LinkAddr returns the Ethernet address in the first option of kind opt
// (NDPOptSourceLinkAddr, NDPOptTargetLinkAddr) of a solicitation or
// advertisement, and whether there is one; it stops at the first
// malformed option (ParseICMPv6 refuses messages that have one).
func (m ICMPv6) LinkAddr(opt uint8) (MAC, bool) {
	if len(m) < NDPLen {
		return MAC{}, false
	}
	for o := m[NDPLen:]; len(o) >= 8 && o[1] != 0 && int(o[1])*8 <= len(o); o = o[int(o[1])*8:] {
		if o[0] == opt && o[1] == 1 {
			return MAC(o[2:8]), true
		}
	}
	return MAC{}, false
}

// ICMPv6Checksum returns the checksum to store in message m (the field
// taken as zero) sent from src to dst.
func ICMPv6Checksum(src, dst [16]byte, m []byte) uint16 {
	p := PseudoSumIPv6(src, dst, IPProtoICMPv6, len(m))
	s := uint32(Checksum(m[:2], p)) + uint32(Checksum(m[4:], 0))
	return ^fold(s)
}

// SetChecksum computes and stores m's checksum for src and dst.
func (m ICMPv6) SetChecksum(src, dst [16]byte) {
	binary.BigEndian.PutUint16(m[2:], ICMPv6Checksum(src, dst, m))
}

// ParseICMPv6 validates the ICMPv6 message of IPv6 packet ip whose upper
// layer (ParseIPv6) starts at off: at least 8 bytes and a right
// checksum; for neighbour discovery also code 0, hop limit 255, the
// target, and options of non-zero length inside the message. It returns
// the message, or nil when it is not one to take.
func ParseICMPv6(ip IPv6, off int) ICMPv6 {
	m := ICMPv6(ip[off:])
	if len(m) < ICMPv6HeaderLen || Checksum(m, PseudoSumIPv6(ip.Src(), ip.Dst(), IPProtoICMPv6, len(m))) != 0xffff {
		return nil
	}
	if t := m.Type(); t == ICMPv6NeighborSolicit || t == ICMPv6NeighborAdvert {
		if m.Code() != 0 || ip.HopLimit() != NDPHopLimit || len(m) < NDPLen {
			return nil
		}
		for o := m[NDPLen:]; len(o) > 0; {
			if len(o) < 8 || o[1] == 0 || int(o[1])*8 > len(o) {
				return nil
			}
			o = o[int(o[1])*8:]
		}
	}
	return m
}

// NDPFields describes a neighbour solicitation or advertisement with its
// one link-layer address option.
type NDPFields struct {
	Type   uint8    // ICMPv6NeighborSolicit or ICMPv6NeighborAdvert
	Flags  uint8    // advertisement: NDPFlagSolicited, NDPFlagOverride, ...
	Target [16]byte // the address asked about, or advertised
	MAC    MAC      // the sender's link address: a solicitation's source option, an advertisement's target option
}

// NDPMessageLen is a solicitation's or advertisement's length with its
// one Ethernet address option.
const NDPMessageLen = NDPLen + 8

// Encode writes the message into b, its checksum computed for src and
// dst, and returns NDPMessageLen, or 0 (writing nothing) if b is short.
func (f *NDPFields) Encode(b []byte, src, dst [16]byte) int {
	if len(b) < NDPMessageLen {
		return 0
	}
	m := ICMPv6(b[:NDPMessageLen])
	clear(m)
	m[0] = f.Type
	if f.Type == ICMPv6NeighborAdvert {
		m[4] = f.Flags
	}
	copy(m[8:24], f.Target[:])
	m[24], m[25] = NDPOptSourceLinkAddr, 1
	if f.Type == ICMPv6NeighborAdvert {
		m[24] = NDPOptTargetLinkAddr
	}
	copy(m[26:32], f.MAC[:])
	m.SetChecksum(src, dst)
	return NDPMessageLen
}

// SolicitedNode returns the solicited-node multicast address of a
// (ff02::1:ffXX:XXXX, its last 24 bits), where solicitations for a are
// sent.
func SolicitedNode(a [16]byte) [16]byte {
	return [16]byte{0: 0xff, 1: 0x02, 11: 0x01, 12: 0xff, 13: a[13], 14: a[14], 15: a[15]}
}

// MulticastMAC returns the Ethernet address of IPv6 multicast address a
// (33:33 and its last 32 bits, RFC 2464).
func MulticastMAC(a [16]byte) MAC { return MAC{0x33, 0x33, a[12], a[13], a[14], a[15]} }

// IsMulticast6 reports whether a is an IPv6 multicast address (ff00::/8).
func IsMulticast6(a [16]byte) bool { return a[0] == 0xff }

package wire

import "encoding/binary"

// The Homa checksum as the full kernel module computes it (since March
// 2026, on every packet it sends): the TCP checksum of the Homa packet,
// RFC 793 style over a pseudo-header of the source and destination
// addresses, protocol 6 (TCP, whatever the IP protocol of the packet:
// the module fills the field for TCP-hijacked framing and leaves it so
// on protocol 146) and the Homa length, then the Homa header and
// payload, stored in the common header's checksum field (offset 16,
// where TCP's is). Kernel receivers do not check it on protocol 146; NICs
// and the TCP path do on hijacked packets.

// IPProtoTCP is the IP protocol number of TCP: what TCP-hijacked Homa
// packets are sent as, and what the Homa checksum's pseudo-header holds.
const IPProtoTCP = 6

// HijackFlags and HijackUrgent mark a TCP segment as a hijacked Homa
// packet: SYN|RST in the flags, which TCP never sets together, and
// 0xb97d in the urgent pointer without URG. They are the kernel module's
// KernelFlags and KernelUrgent, which it writes on every packet.
const (
	HijackFlags  = KernelFlags
	HijackUrgent = KernelUrgent
)

// IsHijacked reports whether a TCP segment's header (c, at least a common
// header long) carries the hijack markers: a Homa packet sent as TCP.
func (c Common) IsHijacked() bool {
	return c.Flags() == HijackFlags && c.Urgent() == HijackUrgent
}

// PseudoSumIPv4 returns the folded one's-complement sum of the IPv4
// pseudo-header of a transport segment of length bytes (RFC 793).
func PseudoSumIPv4(src, dst [4]byte, proto uint8, length int) uint16 {
	s := uint32(binary.BigEndian.Uint16(src[:])) + uint32(binary.BigEndian.Uint16(src[2:])) +
		uint32(binary.BigEndian.Uint16(dst[:])) + uint32(binary.BigEndian.Uint16(dst[2:])) +
		uint32(proto) + uint32(length)&0xffff + uint32(length)>>16
	return fold(s)
}

// PseudoSumIPv6 returns the folded sum of the IPv6 pseudo-header of a
// transport segment of length bytes (RFC 8200 §8.1).
func PseudoSumIPv6(src, dst [16]byte, proto uint8, length int) uint16 {
	s := uint32(Checksum(src[:], 0)) + uint32(Checksum(dst[:], 0)) +
		uint32(proto) + uint32(length)&0xffff + uint32(length)>>16
	return fold(s)
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// HomaChecksum returns the value of the checksum field of the Homa packet
// whose header (and any payload bytes that follow it) is homa and whose
// other payload bytes are tail (nil when the packet is in one piece),
// given the pseudo-header sum (PseudoSumIPv4 or PseudoSumIPv6 with
// IPProtoTCP and len(homa)+len(tail)). The field's current contents are
// ignored. homa must hold at least a common header. It does not allocate.
func HomaChecksum(pseudo uint16, homa, tail []byte) uint16 {
	s := uint32(Checksum(homa[:commonChecksum], pseudo))
	s += uint32(Checksum(homa[commonChecksum+2:], 0))
	return ^fold(s + uint32(tailSum(homa, tail)))
}

// tailSum is the sum of tail as the bytes that follow head: when head is
// of odd length they sit at odd offsets, and the sum is byte-swapped
// (RFC 1071 §2(B)).
func tailSum(head, tail []byte) uint16 {
	t := Checksum(tail, 0)
	if len(head)%2 == 1 {
		t = t<<8 | t>>8
	}
	return t
}

// IsHomaChecksumValid reports whether the checksum field of the Homa
// packet (homa, tail as for HomaChecksum) is correct: the whole packet
// and the pseudo-header sum to 0xffff, so that 0x0000 and 0xffff are the
// same one's-complement value, as a TCP receiver takes them.
func IsHomaChecksumValid(pseudo uint16, homa, tail []byte) bool {
	return fold(uint32(Checksum(homa, pseudo))+uint32(tailSum(homa, tail))) == 0xffff
}

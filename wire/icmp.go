package wire

import "encoding/binary"

// ICMP echo (RFC 792), which the daemon answers so that ping works.
const (
	// IPProtoICMP is the IPv4 protocol number of ICMP.
	IPProtoICMP = 1

	// ICMPEchoReply and ICMPEchoRequest are the ICMP types of ping.
	ICMPEchoReply   = 0
	ICMPEchoRequest = 8

	// ICMPHeaderLen is the length of an echo header: type, code,
	// checksum, identifier and sequence number.
	ICMPHeaderLen = 8
)

// ICMP is a view of an ICMP message (the IPv4 payload), valid while those
// bytes are.
type ICMP []byte

// IsValid reports whether m holds an echo header and its checksum (over
// the whole message) is correct.
func (m ICMP) IsValid() bool {
	return len(m) >= ICMPHeaderLen && Checksum(m, 0) == 0xffff
}

// Type returns the ICMP type.
func (m ICMP) Type() uint8 { return m[0] }

// Code returns the ICMP code.
func (m ICMP) Code() uint8 { return m[1] }

// ID returns the echo identifier.
func (m ICMP) ID() uint16 { return binary.BigEndian.Uint16(m[4:]) }

// Seq returns the echo sequence number.
func (m ICMP) Seq() uint16 { return binary.BigEndian.Uint16(m[6:]) }

// SetType sets the ICMP type (the checksum must be updated after).
func (m ICMP) SetType(t uint8) { m[0] = t }

// UpdateChecksum recomputes the checksum over the whole message.
func (m ICMP) UpdateChecksum() {
	binary.BigEndian.PutUint16(m[2:], 0)
	binary.BigEndian.PutUint16(m[2:], ^Checksum(m, 0))
}

package wire

import "encoding/binary"

// ICMP (RFC 792): echo, which the host answers so that ping works, and
// destination unreachable / port unreachable, which kernel Homa sends for
// a packet to an unbound port and turns into ENOTCONN for the client's
// RPCs to that port (homa_err_handler_v4).
const (
	// IPProtoICMP is the IPv4 protocol number of ICMP.
	IPProtoICMP = 1

	// ICMPEchoReply and ICMPEchoRequest are the ICMP types of ping.
	ICMPEchoReply   = 0
	ICMPEchoRequest = 8

	// ICMPDestUnreachable is the ICMP type of destination unreachable;
	// ICMPPortUnreachable is its code for a port with no listener.
	ICMPDestUnreachable = 3
	ICMPPortUnreachable = 3

	// ICMPHeaderLen is the length of every ICMP header: type, code,
	// checksum and 4 bytes that echo fills with its identifier and
	// sequence number and destination unreachable leaves zero.
	ICMPHeaderLen = 8

	// ICMPErrorQuoteLen is what an ICMP error quotes of the datagram it
	// is about, after its header: the IPv4 header (20 bytes without
	// options) and the first 8 bytes of its payload — for Homa, sport,
	// dport and sequence.
	ICMPErrorQuoteLen = IPv4MinHeaderLen + 8
)

// ICMP is a view of an ICMP message (the IPv4 payload), valid while those
// bytes are.
type ICMP []byte

// IsValid reports whether m holds an ICMP header and its checksum (over
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

// Quoted returns what an error message (destination unreachable) quotes
// of the offending datagram: its IPv4 header and first payload bytes.
// The view is not validated; check its length before reading fields.
func (m ICMP) Quoted() IPv4 { return IPv4(m[ICMPHeaderLen:]) }

// SetType sets the ICMP type (the checksum must be updated after).
func (m ICMP) SetType(t uint8) { m[0] = t }

// UpdateChecksum recomputes the checksum over the whole message.
func (m ICMP) UpdateChecksum() {
	binary.BigEndian.PutUint16(m[2:], 0)
	binary.BigEndian.PutUint16(m[2:], ^Checksum(m, 0))
}

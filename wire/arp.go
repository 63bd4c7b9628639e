package wire

import "encoding/binary"

// ARP for IPv4 over Ethernet (RFC 826), which the daemon answers and uses
// to resolve next hops.
const (
	// EtherTypeARP is the EtherType of ARP.
	EtherTypeARP = 0x0806

	// ARPLen is the length of an Ethernet/IPv4 ARP packet.
	ARPLen = 28

	// ARPRequest and ARPReply are the operation codes.
	ARPRequest = 1
	ARPReply   = 2
)

// Offsets within an ARP packet.
const (
	arpHType = 0
	arpPType = 2
	arpHLen  = 4
	arpPLen  = 5
	arpOp    = 6
	arpSHA   = 8
	arpSPA   = 14
	arpTHA   = 18
	arpTPA   = 24
)

// ARP is a view of an Ethernet/IPv4 ARP packet (the bytes after the
// Ethernet header), valid while those bytes are.
type ARP []byte

// IsValid reports whether a is long enough and is ARP for IPv4 over
// Ethernet (hardware type 1, protocol 0x0800, lengths 6 and 4).
func (a ARP) IsValid() bool {
	return len(a) >= ARPLen && binary.BigEndian.Uint16(a[arpHType:]) == 1 &&
		binary.BigEndian.Uint16(a[arpPType:]) == EtherTypeIPv4 && a[arpHLen] == 6 && a[arpPLen] == 4
}

// Op returns the operation (ARPRequest or ARPReply).
func (a ARP) Op() uint16 { return binary.BigEndian.Uint16(a[arpOp:]) }

// SenderMAC returns the sender hardware address.
func (a ARP) SenderMAC() MAC { return MAC(a[arpSHA : arpSHA+6]) }

// SenderIP returns the sender protocol address.
func (a ARP) SenderIP() [4]byte { return [4]byte(a[arpSPA : arpSPA+4]) }

// TargetMAC returns the target hardware address.
func (a ARP) TargetMAC() MAC { return MAC(a[arpTHA : arpTHA+6]) }

// TargetIP returns the target protocol address.
func (a ARP) TargetIP() [4]byte { return [4]byte(a[arpTPA : arpTPA+4]) }

// ARPFields describes an Ethernet/IPv4 ARP packet, for Encode.
type ARPFields struct {
	Op                   uint16
	SenderMAC, TargetMAC MAC
	SenderIP, TargetIP   [4]byte
}

// Encode writes the packet into b and returns ARPLen, or 0 (writing
// nothing) if b is shorter.
func (f *ARPFields) Encode(b []byte) int {
	if len(b) < ARPLen {
		return 0
	}
	binary.BigEndian.PutUint16(b[arpHType:], 1)
	binary.BigEndian.PutUint16(b[arpPType:], EtherTypeIPv4)
	b[arpHLen], b[arpPLen] = 6, 4
	binary.BigEndian.PutUint16(b[arpOp:], f.Op)
	copy(b[arpSHA:], f.SenderMAC[:])
	copy(b[arpSPA:], f.SenderIP[:])
	copy(b[arpTHA:], f.TargetMAC[:])
	copy(b[arpTPA:], f.TargetIP[:])
	return ARPLen
}

// BroadcastMAC is the Ethernet broadcast address.
var BroadcastMAC = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

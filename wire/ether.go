package wire

import "encoding/binary"

// Ethernet framing: a 14-byte header, optionally followed by one 802.1Q tag.
const (
	// EthernetHeaderLen is the length of an untagged Ethernet header:
	// destination MAC, source MAC and EtherType.
	EthernetHeaderLen = 14

	// VLANTagLen is the length of an 802.1Q tag: the TCI followed by the
	// EtherType of what the tag encloses.
	VLANTagLen = 4

	// EtherTypeIPv4 is the EtherType of IPv4.
	EtherTypeIPv4 = 0x0800

	// EtherTypeIPv6 is the EtherType of IPv6 (ParseIPv6, ParseHomaIP;
	// ParseFrame and ParseHomaIPv4 report DropNotIPv4 for it).
	EtherTypeIPv6 = 0x86DD

	// EtherTypeVLAN is the tag protocol identifier of an 802.1Q tag.
	EtherTypeVLAN = 0x8100
)

// Offsets within an Ethernet header.
const (
	ethDst  = 0
	ethSrc  = 6
	ethType = 12
)

// Offsets within an 802.1Q tag (the 4 bytes after the outer EtherType).
const (
	vlanTCI  = 0
	vlanType = 2
)

// MAC is an Ethernet hardware address.
type MAC [6]byte

// String formats m as six colon-separated lower-case hex bytes.
func (m MAC) String() string {
	const hex = "0123456789abcdef"
	var s [17]byte
	for i, c := range m {
		if i > 0 {
			s[3*i-1] = ':'
		}
		s[3*i] = hex[c>>4]
		s[3*i+1] = hex[c&0xf]
	}
	return string(s[:])
}

// Ethernet is a view of an Ethernet header. Its accessors read and write
// the underlying bytes, so they are valid only while those bytes are (for a
// frame in an mbuf: until the mbuf is freed or sent). Call IsValid before
// using any accessor on bytes that came off the wire.
type Ethernet []byte

// IsValid reports whether e is long enough to hold an Ethernet header.
func (e Ethernet) IsValid() bool { return len(e) >= EthernetHeaderLen }

// Dst returns the destination MAC address.
func (e Ethernet) Dst() MAC { return MAC(e[ethDst : ethDst+6]) }

// Src returns the source MAC address.
func (e Ethernet) Src() MAC { return MAC(e[ethSrc : ethSrc+6]) }

// Type returns the EtherType (EtherTypeVLAN for a tagged frame).
func (e Ethernet) Type() uint16 { return binary.BigEndian.Uint16(e[ethType:]) }

// SetDst sets the destination MAC address.
func (e Ethernet) SetDst(m MAC) { copy(e[ethDst:ethDst+6], m[:]) }

// SetSrc sets the source MAC address.
func (e Ethernet) SetSrc(m MAC) { copy(e[ethSrc:ethSrc+6], m[:]) }

// SetType sets the EtherType.
func (e Ethernet) SetType(t uint16) { binary.BigEndian.PutUint16(e[ethType:], t) }

// VLAN is a view of an 802.1Q tag as it follows the outer EtherType
// (0x8100): a 16-bit TCI (PCP 3 bits, DEI 1 bit, VID 12 bits) and the inner
// EtherType. When priority_marking is pcp, the PCP carries the Homa
// priority. Its lifetime is that of the frame bytes, as for Ethernet.
type VLAN []byte

// IsValid reports whether v is long enough to hold an 802.1Q tag.
func (v VLAN) IsValid() bool { return len(v) >= VLANTagLen }

// TCI returns the whole tag control information field.
func (v VLAN) TCI() uint16 { return binary.BigEndian.Uint16(v[vlanTCI:]) }

// PCP returns the priority code point (0..7).
func (v VLAN) PCP() uint8 { return v[vlanTCI] >> 5 }

// DEI returns the drop eligible indicator.
func (v VLAN) DEI() bool { return v[vlanTCI]&0x10 != 0 }

// VID returns the VLAN identifier (0..4095).
func (v VLAN) VID() uint16 { return v.TCI() & 0x0fff }

// Type returns the EtherType of what the tag encloses.
func (v VLAN) Type() uint16 { return binary.BigEndian.Uint16(v[vlanType:]) }

// SetTCI sets the whole tag control information field.
func (v VLAN) SetTCI(tci uint16) { binary.BigEndian.PutUint16(v[vlanTCI:], tci) }

// SetPCP sets the priority code point, keeping DEI and VID; p is taken
// modulo 8.
func (v VLAN) SetPCP(p uint8) { v[vlanTCI] = v[vlanTCI]&0x1f | (p&7)<<5 }

// SetType sets the enclosed EtherType.
func (v VLAN) SetType(t uint16) { binary.BigEndian.PutUint16(v[vlanType:], t) }

// MakeTCI builds an 802.1Q TCI from its parts; pcp is taken modulo 8 and
// vid modulo 4096.
func MakeTCI(pcp uint8, dei bool, vid uint16) uint16 {
	tci := uint16(pcp&7)<<13 | vid&0x0fff
	if dei {
		tci |= 0x1000
	}
	return tci
}

// EthernetFields describes an Ethernet header, with or without one 802.1Q
// tag, for Encode.
type EthernetFields struct {
	Dst, Src MAC

	// Type is the EtherType of the payload: of the frame when untagged,
	// of the tag's contents when Tagged (normally EtherTypeIPv4).
	Type uint16

	// Tagged inserts an 802.1Q tag carrying TCI (see MakeTCI).
	Tagged bool
	TCI    uint16
}

// Len returns the number of bytes Encode writes: 14, or 18 when tagged.
func (f *EthernetFields) Len() int {
	if f.Tagged {
		return EthernetHeaderLen + VLANTagLen
	}
	return EthernetHeaderLen
}

// Encode writes the header into b and returns the number of bytes written,
// or 0 (writing nothing) if b is shorter than f.Len().
func (f *EthernetFields) Encode(b []byte) int {
	n := f.Len()
	if len(b) < n {
		return 0
	}
	e := Ethernet(b)
	e.SetDst(f.Dst)
	e.SetSrc(f.Src)
	if !f.Tagged {
		e.SetType(f.Type)
		return n
	}
	e.SetType(EtherTypeVLAN)
	v := VLAN(b[EthernetHeaderLen:])
	v.SetTCI(f.TCI)
	v.SetType(f.Type)
	return n
}

// Fields returns the fields of an untagged header. (For a tagged frame the
// Type it returns is EtherTypeVLAN; use Frame.EthernetFields to get both.)
func (e Ethernet) Fields() EthernetFields {
	return EthernetFields{Dst: e.Dst(), Src: e.Src(), Type: e.Type()}
}

// FrameOverhead is what a frame adds to its IP packet at most: the
// Ethernet header and an 802.1Q tag.
const FrameOverhead = EthernetHeaderLen + VLANTagLen

// BufferRoom is the buffer a frame of an IP MTU needs, rounded up to a KB
// and at least 2 KB (2 KB at MTU 1500, 9 KB at 9000): how mbufs are sized
// so that every frame of a port fits in one.
func BufferRoom(mtu int) int { return max(2048, (mtu+FrameOverhead+1023)/1024*1024) }

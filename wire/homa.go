package wire

import "encoding/binary"

// Sizes and limits of Homa packets (the kernel Homa module's homa_wire.h).
const (
	// CommonHeaderLen is the length of the common header that starts
	// every Homa packet. RPC_UNKNOWN, BUSY, FREEZE and NEED_ACK consist
	// of it alone.
	CommonHeaderLen = 28

	// DataHeaderLen is the length of a DATA header; message bytes follow.
	DataHeaderLen = 56

	// GrantHeaderLen is the length of a GRANT packet.
	GrantHeaderLen = 33

	// ResendHeaderLen is the length of a RESEND packet.
	ResendHeaderLen = 37

	// ResendUpstreamLen is the length of the upstream Linux subset's
	// RESEND, which has no priority byte: ParseHoma accepts it too.
	ResendUpstreamLen = 36

	// ControlHeaderLen is the length of RPC_UNKNOWN, BUSY, FREEZE and
	// NEED_ACK packets: the common header and nothing else.
	ControlHeaderLen = CommonHeaderLen

	// CutoffsHeaderLen is the length of a CUTOFFS packet.
	CutoffsHeaderLen = 62

	// AckHeaderLen is the length of an ACK packet.
	AckHeaderLen = 80

	// MinPacketLen is the kernel's HOMA_MIN_PKT_LENGTH: the shortest Homa
	// packet (header + data, without IP and Ethernet headers) a sender
	// may put on the wire; shorter ones are zero-padded so the frame
	// reaches Ethernet's 64-byte minimum (14 + 20 + 26 + 4 FCS). Every
	// Homa header is at least 28 bytes, so no packet built by this
	// package needs padding. It is not a parsing bound: a packet must be
	// at least as long as its own type's header (PacketType.HeaderLen).
	MinPacketLen = 26

	// MaxHeaderLen is the kernel's HOMA_MAX_HEADER: room to reserve in a
	// buffer for any Homa header. It is an upper bound, not the size of
	// a header: the largest header is ACK at 80 bytes, DATA's is 56.
	MaxHeaderLen = 90

	// MaxMessageLength is the largest message the kernel module accepts
	// (HOMA_MAX_MESSAGE_LENGTH). The message_length field is a u32; a
	// configuration may raise the limit between homa-dpdk hosts, so the
	// parser does not enforce it.
	MaxMessageLength = 1_000_000

	// MaxMessageLimit bounds how far a configuration may raise the
	// limit: 2^31 − 1 bytes, so that offset + length of any range of a
	// message fits the u32 offset and length fields and never reaches
	// RESEND's 0xFFFFFFFF ("everything"). Kernel Homa takes no message
	// above MaxMessageLength, so longer ones are for homa-dpdk peers only.
	MaxMessageLimit = 1<<31 - 1

	// NumPriorities is the number of Homa priority levels
	// (HOMA_MAX_PRIORITIES); 7 is the highest.
	NumPriorities = 8
)

// TCP look-alike values the kernel module writes in the common header so
// that NICs segment DATA packets with TSO. Receivers ignore flags, urgent,
// window and checksum on protocol 146.
const (
	// KernelFlags is the flags byte the kernel module sends (SYN|RST, a
	// combination real TCP never uses). The upstream subset sends 0.
	KernelFlags = 6

	// KernelUrgent is the urgent field the kernel module sends.
	KernelUrgent = 0xb97d

	// DoffControl is the doff byte of control packets: 5 words (20
	// bytes), as in a TCP header without options.
	DoffControl = 0x50

	// DoffData is the doff byte of DATA packets: 14 words, the 56-byte
	// DATA header. TSO replicates that many bytes into every segment.
	DoffData = 0xE0
)

// PacketType is the Homa packet type in byte 11 of the common header.
type PacketType uint8

// The nine Homa packet types. Anything outside TypeData..TypeAck is
// dropped (DropBadType).
const (
	TypeData       PacketType = 0x10 // message bytes, sender → receiver
	TypeGrant      PacketType = 0x11 // "you may send up to offset, at priority"
	TypeResend     PacketType = 0x12 // "retransmit [offset, offset+length)"
	TypeRPCUnknown PacketType = 0x13 // "I have no state for this RPC"
	TypeBusy       PacketType = 0x14 // "alive, but not sending right now"
	TypeCutoffs    PacketType = 0x15 // the receiver's unscheduled priority cutoffs
	TypeFreeze     PacketType = 0x16 // debugging only: accept and count
	TypeNeedAck    PacketType = 0x17 // server → client: acknowledge a finished RPC
	TypeAck        PacketType = 0x18 // client → server: these RPCs are done
)

var headerLens = [...]uint8{
	TypeData - TypeData:       DataHeaderLen,
	TypeGrant - TypeData:      GrantHeaderLen,
	TypeResend - TypeData:     ResendHeaderLen,
	TypeRPCUnknown - TypeData: ControlHeaderLen,
	TypeBusy - TypeData:       ControlHeaderLen,
	TypeCutoffs - TypeData:    CutoffsHeaderLen,
	TypeFreeze - TypeData:     ControlHeaderLen,
	TypeNeedAck - TypeData:    ControlHeaderLen,
	TypeAck - TypeData:        AckHeaderLen,
}

var typeNames = [...]string{
	"DATA", "GRANT", "RESEND", "RPC_UNKNOWN", "BUSY", "CUTOFFS", "FREEZE", "NEED_ACK", "ACK",
}

// IsValid reports whether t is one of the nine Homa packet types.
func (t PacketType) IsValid() bool { return t >= TypeData && t <= TypeAck }

// HeaderLen returns the length of t's header (the shortest valid packet
// of type t), or 0 if t is not a Homa type.
func (t PacketType) HeaderLen() int {
	if !t.IsValid() {
		return 0
	}
	return int(headerLens[t-TypeData])
}

// String returns the kernel's name for t ("DATA", "GRANT", ...), or
// "TYPE_0xNN" for an unknown type.
func (t PacketType) String() string {
	if t.IsValid() {
		return typeNames[t-TypeData]
	}
	const hex = "0123456789abcdef"
	return "TYPE_0x" + string([]byte{hex[t>>4], hex[t&0xf]})
}

// Offsets within the common header, laid out like a TCP header.
const (
	commonSrcPort  = 0  // u16 sport: sender's Homa port
	commonDstPort  = 2  // u16 dport: receiver's Homa port
	commonSequence = 4  // u32: DATA offset when seg.offset is OffsetInSequence
	commonUnused   = 8  // 3 zero bytes (TCP ack high bytes)
	commonType     = 11 // u8 packet type (TCP ack low byte)
	commonDoff     = 12 // u8: high nibble = header length in words
	commonFlags    = 13 // u8 TCP flags look-alike
	commonWindow   = 14 // u16, zero
	commonChecksum = 16 // u16, optional, zero when not computed
	commonUrgent   = 18 // u16 TCP urgent look-alike
	commonSenderID = 20 // u64 RPC id as the sender knows it
)

// Common is a view of a Homa packet from its common header on. The other
// header views (Data, Grant, ...) are the same bytes: convert with
// Data(c) once ParseHoma has vouched for the type and length. Accessors
// alias the underlying bytes and are valid only while they are.
type Common []byte

// IsValid reports whether c is long enough to hold a common header.
func (c Common) IsValid() bool { return len(c) >= CommonHeaderLen }

// SrcPort returns the sender's Homa port.
func (c Common) SrcPort() uint16 { return binary.BigEndian.Uint16(c[commonSrcPort:]) }

// DstPort returns the receiver's Homa port.
func (c Common) DstPort() uint16 { return binary.BigEndian.Uint16(c[commonDstPort:]) }

// Sequence returns the sequence field (for DATA: the offset of the first
// byte when seg.offset is OffsetInSequence).
func (c Common) Sequence() uint32 { return binary.BigEndian.Uint32(c[commonSequence:]) }

// Type returns the packet type.
func (c Common) Type() PacketType { return PacketType(c[commonType]) }

// Doff returns the doff byte (DoffData, DoffControl from conforming
// senders; the parser does not depend on it).
func (c Common) Doff() uint8 { return c[commonDoff] }

// Flags returns the TCP look-alike flags byte.
func (c Common) Flags() uint8 { return c[commonFlags] }

// Window returns the unused window field.
func (c Common) Window() uint16 { return binary.BigEndian.Uint16(c[commonWindow:]) }

// Checksum returns the optional checksum field (0 when not computed).
func (c Common) Checksum() uint16 { return binary.BigEndian.Uint16(c[commonChecksum:]) }

// Urgent returns the TCP look-alike urgent field.
func (c Common) Urgent() uint16 { return binary.BigEndian.Uint16(c[commonUrgent:]) }

// SenderID returns the RPC id as the sender knows it; the receiver's id
// for the RPC is LocalID(SenderID()).
func (c Common) SenderID() uint64 { return binary.BigEndian.Uint64(c[commonSenderID:]) }

// SetSrcPort sets the sender's Homa port.
func (c Common) SetSrcPort(p uint16) { binary.BigEndian.PutUint16(c[commonSrcPort:], p) }

// SetDstPort sets the receiver's Homa port.
func (c Common) SetDstPort(p uint16) { binary.BigEndian.PutUint16(c[commonDstPort:], p) }

// SetSequence sets the sequence field.
func (c Common) SetSequence(s uint32) { binary.BigEndian.PutUint32(c[commonSequence:], s) }

// SetType sets the packet type.
func (c Common) SetType(t PacketType) { c[commonType] = uint8(t) }

// SetDoff sets the doff byte.
func (c Common) SetDoff(d uint8) { c[commonDoff] = d }

// SetFlags sets the flags byte.
func (c Common) SetFlags(f uint8) { c[commonFlags] = f }

// SetWindow sets the window field.
func (c Common) SetWindow(w uint16) { binary.BigEndian.PutUint16(c[commonWindow:], w) }

// SetChecksum sets the checksum field.
func (c Common) SetChecksum(s uint16) { binary.BigEndian.PutUint16(c[commonChecksum:], s) }

// SetUrgent sets the urgent field.
func (c Common) SetUrgent(u uint16) { binary.BigEndian.PutUint16(c[commonUrgent:], u) }

// SetSenderID sets the sender's RPC id.
func (c Common) SetSenderID(id uint64) { binary.BigEndian.PutUint64(c[commonSenderID:], id) }

// Compat holds the common-header fields that exist only so Homa packets
// look like TCP to NICs (TSO) and middleboxes; receivers ignore them on
// protocol 146.
//
// The zero value selects the kernel module's values: doff DoffData for
// DATA and DoffControl otherwise, flags KernelFlags (6), window 0,
// checksum 0 (not computed), urgent KernelUrgent (0xb97d). Set Explicit
// to write the other fields exactly as given.
type Compat struct {
	Explicit bool
	Doff     uint8
	Flags    uint8
	Window   uint16
	Checksum uint16
	Urgent   uint16
}

// KernelCompat returns, with Explicit set, the values the zero Compat
// writes for packet type t.
func KernelCompat(t PacketType) Compat {
	return Compat{Explicit: true, Doff: defaultDoff(t), Flags: KernelFlags, Urgent: KernelUrgent}
}

// UpstreamCompat returns the values the upstream Linux subset writes for
// packet type t: doff as the kernel module, flags 0, urgent 0.
func UpstreamCompat(t PacketType) Compat {
	return Compat{Explicit: true, Doff: defaultDoff(t)}
}

func defaultDoff(t PacketType) uint8 {
	if t == TypeData {
		return DoffData
	}
	return DoffControl
}

// CommonFields describes the common header for the typed encoders
// (DataFields.Encode, GrantFields.Encode, ...), which supply the type.
type CommonFields struct {
	SrcPort  uint16 // sender's Homa port
	DstPort  uint16 // receiver's Homa port
	Sequence uint32 // DATA: offset of the first byte (see DataFields.Offset); else 0
	SenderID uint64 // RPC id as the sender knows it (even for a client)
	Compat   Compat // TCP look-alike fields; zero value = kernel module style
}

// encode writes the 28-byte common header of a type-t packet into c,
// which the caller has checked is long enough. The three unused bytes are
// written as zero.
func (f *CommonFields) encode(c Common, t PacketType) {
	_ = c[CommonHeaderLen-1]
	c.SetSrcPort(f.SrcPort)
	c.SetDstPort(f.DstPort)
	c.SetSequence(f.Sequence)
	c[commonUnused], c[commonUnused+1], c[commonUnused+2] = 0, 0, 0
	c.SetType(t)
	cp := f.Compat
	if !cp.Explicit {
		cp = KernelCompat(t)
	}
	c.SetDoff(cp.Doff)
	c.SetFlags(cp.Flags)
	c.SetWindow(cp.Window)
	c.SetChecksum(cp.Checksum)
	c.SetUrgent(cp.Urgent)
	c.SetSenderID(f.SenderID)
}

// Fields returns the common header's fields, with Compat.Explicit set so
// that re-encoding reproduces the TCP look-alike bytes as received.
func (c Common) Fields() CommonFields {
	return CommonFields{
		SrcPort:  c.SrcPort(),
		DstPort:  c.DstPort(),
		Sequence: c.Sequence(),
		SenderID: c.SenderID(),
		Compat: Compat{
			Explicit: true,
			Doff:     c.Doff(),
			Flags:    c.Flags(),
			Window:   c.Window(),
			Checksum: c.Checksum(),
			Urgent:   c.Urgent(),
		},
	}
}

// IsClientID reports whether id is a client's id for an RPC: client ids
// are even, server ids odd.
func IsClientID(id uint64) bool { return id&1 == 0 }

// ServerID returns the server's id for the RPC whose client id is
// clientID: clientID ^ 1.
func ServerID(clientID uint64) uint64 { return clientID ^ 1 }

// LocalID returns the receiver's id for an RPC named by a packet's
// sender_id: senderID ^ 1 (a client's packet names the client id, which
// the server knows as id^1, and the other way round).
func LocalID(senderID uint64) uint64 { return senderID ^ 1 }

// PayloadPerPacket returns how many message bytes fit in one DATA packet:
// mtu − ipHeaderLen − DataHeaderLen, or 0 if the MTU is too small. For a
// 1500-byte MTU over IPv4 (ipHeaderLen IPv4MinHeaderLen) it is 1424.
func PayloadPerPacket(mtu, ipHeaderLen int) int {
	n := mtu - ipHeaderLen - DataHeaderLen
	if n < 0 {
		return 0
	}
	return n
}

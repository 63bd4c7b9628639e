package wire

import "encoding/binary"

// An ack entry (10 bytes) tells a server that the client has the response
// of an RPC, so the server may free its state. DATA packets piggyback one;
// ACK packets carry up to MaxAcks.
const (
	// AckEntryLen is the length of one ack entry.
	AckEntryLen = 10

	// MaxAcks is the capacity of an ACK packet's acks array
	// (HOMA_MAX_ACKS_PER_PKT). A larger num_acks is dropped
	// (DropBadNumAcks).
	MaxAcks = 5
)

// Offsets within an ack entry.
const (
	ackClientID   = 0 // u64, 0 = no ack
	ackServerPort = 8 // u16
)

// Offsets within an ACK packet.
const (
	ackNumAcks = 28 // u16
	ackAcks    = 30 // MaxAcks entries, through byte 79
)

// AckEntry is a view of one 10-byte ack entry. Its lifetime is that of
// the packet bytes.
type AckEntry []byte

// IsValid reports whether a is long enough to hold an ack entry.
func (a AckEntry) IsValid() bool { return len(a) >= AckEntryLen }

// ClientID returns the client's id of the acknowledged RPC; 0 means the
// entry is empty.
func (a AckEntry) ClientID() uint64 { return binary.BigEndian.Uint64(a[ackClientID:]) }

// ServerPort returns the server port of the acknowledged RPC.
func (a AckEntry) ServerPort() uint16 { return binary.BigEndian.Uint16(a[ackServerPort:]) }

// SetClientID sets the client id.
func (a AckEntry) SetClientID(id uint64) { binary.BigEndian.PutUint64(a[ackClientID:], id) }

// SetServerPort sets the server port.
func (a AckEntry) SetServerPort(p uint16) { binary.BigEndian.PutUint16(a[ackServerPort:], p) }

// Fields returns the entry's fields.
func (a AckEntry) Fields() AckEntryFields {
	return AckEntryFields{ClientID: a.ClientID(), ServerPort: a.ServerPort()}
}

// AckEntryFields describes one ack entry. The zero value is "no ack".
type AckEntryFields struct {
	ClientID   uint64 // client's id of the finished RPC; 0 = none
	ServerPort uint16 // the server's Homa port
}

// Encode writes the entry into b and returns AckEntryLen, or 0 (writing
// nothing) if b is too short.
func (f *AckEntryFields) Encode(b []byte) int {
	if len(b) < AckEntryLen {
		return 0
	}
	a := AckEntry(b)
	a.SetClientID(f.ClientID)
	a.SetServerPort(f.ServerPort)
	return AckEntryLen
}

// Ack is a view of an ACK packet (80 bytes): common header (whose own
// sender_id also acknowledges that RPC), num_acks u16 @28, acks[5] @30..79.
type Ack []byte

// IsValid reports whether a is at least AckHeaderLen bytes long and
// num_acks is at most MaxAcks.
func (a Ack) IsValid() bool { return len(a) >= AckHeaderLen && a.NumAcks() <= MaxAcks }

// Common returns the common header.
func (a Ack) Common() Common { return Common(a) }

// NumAcks returns how many entries of the array are in use.
func (a Ack) NumAcks() uint16 { return binary.BigEndian.Uint16(a[ackNumAcks:]) }

// Entry returns entry i (0 ≤ i < MaxAcks) of the acks array; it panics
// for i outside that range. Entries at NumAcks and beyond are unused.
func (a Ack) Entry(i int) AckEntry {
	acks, off := a[ackAcks:AckHeaderLen:AckHeaderLen], i*AckEntryLen
	return AckEntry(acks[off : off+AckEntryLen : off+AckEntryLen])
}

// SetNumAcks sets num_acks.
func (a Ack) SetNumAcks(n uint16) { binary.BigEndian.PutUint16(a[ackNumAcks:], n) }

// AckFields describes an ACK packet.
type AckFields struct {
	Common  CommonFields
	NumAcks uint16                  // entries of Acks in use, ≤ MaxAcks
	Acks    [MaxAcks]AckEntryFields // all five are written; unused ones should be zero
}

// Encode writes an ACK packet into b and returns AckHeaderLen, or 0
// (writing nothing) if b is too short or NumAcks exceeds MaxAcks.
func (f *AckFields) Encode(b []byte) int {
	if len(b) < AckHeaderLen || f.NumAcks > MaxAcks {
		return 0
	}
	a := Ack(b[:AckHeaderLen])
	f.Common.encode(Common(a), TypeAck)
	a.SetNumAcks(f.NumAcks)
	for i := range f.Acks {
		f.Acks[i].Encode(a.Entry(i))
	}
	return AckHeaderLen
}

// Fields returns the packet's fields, all five entries included.
func (a Ack) Fields() AckFields {
	f := AckFields{Common: Common(a).Fields(), NumAcks: a.NumAcks()}
	for i := range f.Acks {
		f.Acks[i] = a.Entry(i).Fields()
	}
	return f
}

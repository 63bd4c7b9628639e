package wire

import "encoding/binary"

// OffsetInSequence in seg.offset means "the offset of this packet's first
// byte is in the common header's sequence field". The kernel module's TSO
// path sends this form; a receiver must accept both.
const OffsetInSequence = 0xFFFFFFFF

// Offsets within a DATA packet.
const (
	dataMessageLength = 28 // u32 total bytes in the message
	dataIncoming      = 32 // u32 sender will send up to here without grants
	dataAck           = 36 // 10-byte ack entry, piggybacked
	dataCutoffVersion = 46 // u16 version of the receiver's cutoffs in use
	dataRetransmit    = 48 // u8: 1 when answering RESEND
	dataPad           = 49 // 3 pad bytes: zero from the kernel; homa-dpdk's incast allowance
	dataSegOffset     = 52 // u32 offset of the first byte, or OffsetInSequence
)

// Data is a view of a DATA packet: the 56-byte header followed by message
// bytes. From ParseFrame it ends where the IPv4 total length says, so
// Payload excludes link-layer padding. Accessors alias the packet bytes
// and are valid only while they are.
type Data []byte

// IsValid reports whether d is long enough to hold a DATA header.
func (d Data) IsValid() bool { return len(d) >= DataHeaderLen }

// Common returns the common header.
func (d Data) Common() Common { return Common(d) }

// MessageLength returns the total length of the message in bytes.
func (d Data) MessageLength() uint32 { return binary.BigEndian.Uint32(d[dataMessageLength:]) }

// Incoming returns the offset up to which the sender will send without
// further grants.
func (d Data) Incoming() uint32 { return binary.BigEndian.Uint32(d[dataIncoming:]) }

// Ack returns the piggybacked ack entry (ClientID 0 when there is none).
func (d Data) Ack() AckEntry { return AckEntry(d[dataAck : dataAck+AckEntryLen : dataAck+AckEntryLen]) }

// CutoffVersion returns the version of the receiver's CUTOFFS the sender
// used to pick the priority.
func (d Data) CutoffVersion() uint16 { return binary.BigEndian.Uint16(d[dataCutoffVersion:]) }

// Retransmit returns 1 if the packet answers a RESEND, else 0.
func (d Data) Retransmit() uint8 { return d[dataRetransmit] }

// SegOffset returns seg.offset as sent: an offset, or OffsetInSequence.
func (d Data) SegOffset() uint32 { return binary.BigEndian.Uint32(d[dataSegOffset:]) }

// Offset returns the message offset of the packet's first byte, taking it
// from the sequence field when seg.offset is OffsetInSequence.
func (d Data) Offset() uint32 {
	if off := d.SegOffset(); off != OffsetInSequence {
		return off
	}
	return Common(d).Sequence()
}

// Payload returns the message bytes after the header. It aliases d.
func (d Data) Payload() []byte { return d[DataHeaderLen:] }

// Segment returns the message offset of the packet's first byte and the
// bytes themselves (aliasing d): the packet carries message bytes
// [offset, offset+len(payload)). Whether that range lies within
// MessageLength is for the caller to check.
func (d Data) Segment() (offset uint32, payload []byte) { return d.Offset(), d[DataHeaderLen:] }

// Pad returns the three pad bytes at offset 49. Kernel Homa writes them
// as zero and never reads them; homa-dpdk carries its receiver's
// unscheduled allowance there (incast control, see package sched's
// EncodeAllowance). The array is a copy.
func (d Data) Pad() [3]byte { return [3]byte(d[dataPad : dataPad+3]) }

// SetMessageLength sets message_length.
func (d Data) SetMessageLength(n uint32) { binary.BigEndian.PutUint32(d[dataMessageLength:], n) }

// SetIncoming sets incoming.
func (d Data) SetIncoming(n uint32) { binary.BigEndian.PutUint32(d[dataIncoming:], n) }

// SetCutoffVersion sets cutoff_version.
func (d Data) SetCutoffVersion(v uint16) { binary.BigEndian.PutUint16(d[dataCutoffVersion:], v) }

// SetRetransmit sets the retransmit byte.
func (d Data) SetRetransmit(r uint8) { d[dataRetransmit] = r }

// SetPad sets the three pad bytes at offset 49 (see Pad).
func (d Data) SetPad(p [3]byte) { copy(d[dataPad:dataPad+3], p[:]) }

// SetSegOffset sets seg.offset (an offset, or OffsetInSequence).
func (d Data) SetSegOffset(off uint32) { binary.BigEndian.PutUint32(d[dataSegOffset:], off) }

// DataFields describes a DATA header. Encode writes only the 56-byte
// header; the caller places the message bytes after it.
type DataFields struct {
	Common        CommonFields   // Sequence carries the offset in the TSO form
	MessageLength uint32         // total bytes in the message
	Incoming      uint32         // sender sends up to this offset without grants
	Ack           AckEntryFields // piggybacked ack; zero = none
	CutoffVersion uint16         // version of the receiver's cutoffs in use
	Retransmit    uint8          // 1 when answering RESEND

	// Pad is written to the three pad bytes at offset 49: zero for the
	// kernel's format, or homa-dpdk's incast allowance (see Data.Pad).
	Pad [3]byte

	// Offset is written to seg.offset: the message offset of the first
	// byte, or OffsetInSequence with the offset in Common.Sequence.
	Offset uint32
}

// Encode writes a DATA header into b and returns DataHeaderLen, or 0
// (writing nothing) if b is shorter than that.
func (f *DataFields) Encode(b []byte) int {
	if len(b) < DataHeaderLen {
		return 0
	}
	d := Data(b[:DataHeaderLen])
	f.Common.encode(Common(d), TypeData)
	d.SetMessageLength(f.MessageLength)
	d.SetIncoming(f.Incoming)
	f.Ack.Encode(d.Ack())
	d.SetCutoffVersion(f.CutoffVersion)
	d.SetRetransmit(f.Retransmit)
	d.SetPad(f.Pad)
	d.SetSegOffset(f.Offset)
	return DataHeaderLen
}

// Fields returns the header's fields (Offset is seg.offset as sent).
func (d Data) Fields() DataFields {
	return DataFields{
		Common:        Common(d).Fields(),
		MessageLength: d.MessageLength(),
		Incoming:      d.Incoming(),
		Ack:           d.Ack().Fields(),
		CutoffVersion: d.CutoffVersion(),
		Retransmit:    d.Retransmit(),
		Pad:           d.Pad(),
		Offset:        d.SegOffset(),
	}
}

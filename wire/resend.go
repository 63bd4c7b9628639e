package wire

import "encoding/binary"

// ResendAll as a RESEND length means "everything sent so far".
const ResendAll = 0xFFFFFFFF

// Offsets within a RESEND packet (37 bytes).
const (
	resendOffset   = 28 // u32 first byte to retransmit
	resendLength   = 32 // u32 bytes to retransmit, or ResendAll
	resendPriority = 36 // u8 priority for the retransmitted bytes
)

// Resend is a view of a RESEND packet: receiver → sender, "retransmit
// [Offset, Offset+Length)". Its lifetime is that of the packet bytes.
type Resend []byte

// IsValid reports whether r is long enough to hold a RESEND header, in
// either form (37 bytes, or the upstream subset's 36).
func (r Resend) IsValid() bool { return len(r) >= ResendUpstreamLen }

// HasPriority reports whether r carries a priority byte: false for the
// upstream subset's 36-byte RESEND, which leaves the sender to choose.
func (r Resend) HasPriority() bool { return len(r) >= ResendHeaderLen }

// Common returns the common header.
func (r Resend) Common() Common { return Common(r) }

// Offset returns the message offset of the first byte to retransmit.
func (r Resend) Offset() uint32 { return binary.BigEndian.Uint32(r[resendOffset:]) }

// Length returns how many bytes to retransmit, or ResendAll.
func (r Resend) Length() uint32 { return binary.BigEndian.Uint32(r[resendLength:]) }

// Priority returns the priority to retransmit at (not range-checked), or
// 0 when r has none (HasPriority).
func (r Resend) Priority() uint8 {
	if !r.HasPriority() {
		return 0
	}
	return r[resendPriority]
}

// SetOffset sets the offset.
func (r Resend) SetOffset(off uint32) { binary.BigEndian.PutUint32(r[resendOffset:], off) }

// SetLength sets the length.
func (r Resend) SetLength(n uint32) { binary.BigEndian.PutUint32(r[resendLength:], n) }

// SetPriority sets the priority.
func (r Resend) SetPriority(p uint8) { r[resendPriority] = p }

// ResendFields describes a RESEND packet.
type ResendFields struct {
	Common   CommonFields
	Offset   uint32 // first byte to retransmit
	Length   uint32 // bytes to retransmit, or ResendAll
	Priority uint8  // priority for the retransmitted bytes (0..7)
	// Upstream writes the upstream subset's 36-byte form, without the
	// priority byte (Priority is then ignored).
	Upstream bool
}

// Encode writes a RESEND packet into b and returns its length
// (ResendHeaderLen, or ResendUpstreamLen with Upstream), or 0 (writing
// nothing) if b is too short.
func (f *ResendFields) Encode(b []byte) int {
	n := ResendHeaderLen
	if f.Upstream {
		n = ResendUpstreamLen
	}
	if len(b) < n {
		return 0
	}
	r := Resend(b[:n])
	f.Common.encode(Common(r), TypeResend)
	r.SetOffset(f.Offset)
	r.SetLength(f.Length)
	if !f.Upstream {
		r.SetPriority(f.Priority)
	}
	return n
}

// Fields returns the packet's fields.
func (r Resend) Fields() ResendFields {
	return ResendFields{Common: Common(r).Fields(), Offset: r.Offset(), Length: r.Length(), Priority: r.Priority(), Upstream: !r.HasPriority()}
}

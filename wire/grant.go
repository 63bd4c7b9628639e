package wire

import "encoding/binary"

// Offsets within a GRANT packet (33 bytes).
const (
	grantOffset   = 28 // u32: sender may send bytes up to (not including) this offset
	grantPriority = 32 // u8: priority for the granted bytes
)

// Grant is a view of a GRANT packet: receiver → sender, "you may send up
// to Offset, at Priority". Its lifetime is that of the packet bytes.
type Grant []byte

// IsValid reports whether g is long enough to hold a GRANT header.
func (g Grant) IsValid() bool { return len(g) >= GrantHeaderLen }

// Common returns the common header.
func (g Grant) Common() Common { return Common(g) }

// Offset returns the message offset up to which the sender may send.
func (g Grant) Offset() uint32 { return binary.BigEndian.Uint32(g[grantOffset:]) }

// Priority returns the priority to send the granted bytes at. It is not
// range-checked: values ≥ NumPriorities are for the caller to clamp.
func (g Grant) Priority() uint8 { return g[grantPriority] }

// SetOffset sets the granted offset.
func (g Grant) SetOffset(off uint32) { binary.BigEndian.PutUint32(g[grantOffset:], off) }

// SetPriority sets the priority.
func (g Grant) SetPriority(p uint8) { g[grantPriority] = p }

// GrantFields describes a GRANT packet.
type GrantFields struct {
	Common   CommonFields
	Offset   uint32 // sender may send up to this message offset
	Priority uint8  // priority for the granted bytes (0..7)
}

// Encode writes a GRANT packet into b and returns GrantHeaderLen, or 0
// (writing nothing) if b is too short.
func (f *GrantFields) Encode(b []byte) int {
	if len(b) < GrantHeaderLen {
		return 0
	}
	g := Grant(b[:GrantHeaderLen])
	f.Common.encode(Common(g), TypeGrant)
	g.SetOffset(f.Offset)
	g.SetPriority(f.Priority)
	return GrantHeaderLen
}

// Fields returns the packet's fields.
func (g Grant) Fields() GrantFields {
	return GrantFields{Common: Common(g).Fields(), Offset: g.Offset(), Priority: g.Priority()}
}

package wire

// RPC_UNKNOWN, BUSY, FREEZE and NEED_ACK are a common header and nothing
// more (ControlHeaderLen, 28 bytes); their meaning is the type alone. They
// have no view type of their own: read them through Common.

// IsControlType reports whether t is one of the header-only types:
// RPC_UNKNOWN, BUSY, FREEZE, NEED_ACK.
func IsControlType(t PacketType) bool {
	switch t {
	case TypeRPCUnknown, TypeBusy, TypeFreeze, TypeNeedAck:
		return true
	}
	return false
}

// ControlFields describes an RPC_UNKNOWN, BUSY, FREEZE or NEED_ACK packet.
type ControlFields struct {
	Type   PacketType // TypeRPCUnknown, TypeBusy, TypeFreeze or TypeNeedAck
	Common CommonFields
}

// Encode writes the packet into b and returns ControlHeaderLen, or 0
// (writing nothing) if b is too short or Type is not a header-only type.
func (f *ControlFields) Encode(b []byte) int {
	if len(b) < ControlHeaderLen || !IsControlType(f.Type) {
		return 0
	}
	f.Common.encode(Common(b[:ControlHeaderLen]), f.Type)
	return ControlHeaderLen
}

// ControlFields returns the fields of a header-only packet: its type and
// common header. For other types the Type is returned all the same, and
// ControlFields.Encode will refuse it.
func (c Common) ControlFields() ControlFields {
	return ControlFields{Type: c.Type(), Common: c.Fields()}
}

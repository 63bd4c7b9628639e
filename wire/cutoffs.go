package wire

import "encoding/binary"

// Offsets within a CUTOFFS packet (62 bytes).
const (
	cutoffsUnsched = 28 // NumPriorities × u32, through byte 59
	cutoffsVersion = 60 // u16
)

// Cutoffs is a view of a CUTOFFS packet: receiver → sender, "these are my
// unscheduled priority cutoffs, version V". A message of length L goes out
// at the highest priority i whose cutoff is ≥ L; entry 0 is ignored and
// treated as infinity. Its lifetime is that of the packet bytes.
type Cutoffs []byte

// IsValid reports whether c is long enough to hold a CUTOFFS header.
func (c Cutoffs) IsValid() bool { return len(c) >= CutoffsHeaderLen }

// Common returns the common header.
func (c Cutoffs) Common() Common { return Common(c) }

// Cutoff returns unsched_cutoffs[i] (0 ≤ i < NumPriorities; panics
// otherwise). Entry 0 is sent but carries no meaning.
func (c Cutoffs) Cutoff(i int) uint32 {
	return binary.BigEndian.Uint32(c[cutoffsUnsched:cutoffsVersion:cutoffsVersion][4*i : 4*i+4])
}

// Version returns cutoff_version, echoed back in DATA packets.
func (c Cutoffs) Version() uint16 { return binary.BigEndian.Uint16(c[cutoffsVersion:]) }

// SetCutoff sets unsched_cutoffs[i] (0 ≤ i < NumPriorities; panics
// otherwise).
func (c Cutoffs) SetCutoff(i int, v uint32) {
	binary.BigEndian.PutUint32(c[cutoffsUnsched:cutoffsVersion:cutoffsVersion][4*i:4*i+4], v)
}

// SetVersion sets cutoff_version.
func (c Cutoffs) SetVersion(v uint16) { binary.BigEndian.PutUint16(c[cutoffsVersion:], v) }

// CutoffsFields describes a CUTOFFS packet.
type CutoffsFields struct {
	Common  CommonFields
	Cutoffs [NumPriorities]uint32 // message-length cutoffs per priority; [0] ignored
	Version uint16                // cutoff_version
}

// Encode writes a CUTOFFS packet into b and returns CutoffsHeaderLen, or 0
// (writing nothing) if b is too short.
func (f *CutoffsFields) Encode(b []byte) int {
	if len(b) < CutoffsHeaderLen {
		return 0
	}
	c := Cutoffs(b[:CutoffsHeaderLen])
	f.Common.encode(Common(c), TypeCutoffs)
	for i, v := range f.Cutoffs {
		c.SetCutoff(i, v)
	}
	c.SetVersion(f.Version)
	return CutoffsHeaderLen
}

// Fields returns the packet's fields.
func (c Cutoffs) Fields() CutoffsFields {
	f := CutoffsFields{Common: Common(c).Fields(), Version: c.Version()}
	for i := range f.Cutoffs {
		f.Cutoffs[i] = c.Cutoff(i)
	}
	return f
}

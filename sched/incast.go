package sched

// IncastConfig sets the receiver's unscheduled allowance policy (see the
// package doc). Sizes in bytes.
type IncastConfig struct {
	// UnschedBytes is the normal allowance (kernel unsched_bytes).
	UnschedBytes int

	// Budget is the unscheduled backlog the receiver accepts before it
	// shrinks the allowance. 0 disables incast control.
	Budget int

	// MinAllowance is the smallest allowance advertised.
	MinAllowance int
}

// DefaultIncastConfig: allowance 40,000 until 400,000 unscheduled bytes
// are expected (ten full senders), never below one 1500-MTU packet.
func DefaultIncastConfig() IncastConfig {
	return IncastConfig{UnschedBytes: 40_000, Budget: 400_000, MinAllowance: 1424}
}

// Incast tracks the unscheduled bytes a receiver expects and derives the
// allowance it advertises. Owned by one goroutine; no allocation.
type Incast struct {
	cfg     IncastConfig
	backlog int // bytes expected unscheduled and not yet received
}

// NewIncast returns an incast controller.
func NewIncast(cfg IncastConfig) *Incast { return &Incast{cfg: cfg} }

// Add changes the expected unscheduled backlog by delta bytes (negative
// when bytes arrive or expectations end).
func (c *Incast) Add(delta int) {
	c.backlog = max(c.backlog+delta, 0)
}

// Backlog returns the expected unscheduled bytes.
func (c *Incast) Backlog() int { return c.backlog }

// Allowance returns the unscheduled bytes a sender may send to this
// receiver now: what is left of Budget after the backlog, at most
// UnschedBytes and at least MinAllowance, rounded down to AllowanceUnit.
// With Budget 0 it is always UnschedBytes.
func (c *Incast) Allowance() int {
	a := c.cfg.UnschedBytes
	if c.cfg.Budget > 0 {
		a = max(min(a, c.cfg.Budget-c.backlog), c.cfg.MinAllowance)
	}
	return a / AllowanceUnit * AllowanceUnit
}

// Allowance encoding in the three pad bytes of a DATA header (offset 49):
// AllowanceMarker, then the allowance in AllowanceUnit bytes, big-endian
// u16. Kernel Homa sends zeros there and ignores them.
const (
	AllowanceMarker = 0x81
	AllowanceUnit   = 64
	MaxAllowance    = 0xFFFF * AllowanceUnit
)

// EncodeAllowance returns the pad bytes advertising allowance bytes
// (clamped to 0..MaxAllowance, rounded down to AllowanceUnit).
func EncodeAllowance(allowance int) [3]byte {
	u := min(max(allowance, 0), MaxAllowance) / AllowanceUnit
	return [3]byte{AllowanceMarker, byte(u >> 8), byte(u)}
}

// DecodeAllowance reads pad bytes; ok is false when they carry no
// allowance (a kernel peer's zeros).
func DecodeAllowance(pad [3]byte) (allowance int, ok bool) {
	if pad[0] != AllowanceMarker {
		return 0, false
	}
	return (int(pad[1])<<8 | int(pad[2])) * AllowanceUnit, true
}

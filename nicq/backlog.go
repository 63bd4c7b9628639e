package nicq

// Ethernet framing that occupies the wire but not the frame handed to the
// NIC: preamble and start delimiter (8), frame check sequence (4) and the
// minimum inter-frame gap (12), in bytes.
const wireOverhead = 8 + 4 + 12

// minFrame is the shortest Ethernet frame without its FCS.
const minFrame = 60

// Backlog estimates how much of the port's transmit queue the NIC still
// has to send, in nanoseconds of link time, from what was handed to it and
// the link rate. It is an estimate: it assumes the NIC sends at line rate
// from the moment it has packets. The pacer keeps it below a bound
// (max_nic_queue_us) so that the NIC's queue stays short.
type Backlog struct {
	psPerByte uint64 // picoseconds to send one byte at the link rate
	busyUntil int64  // ns: when the NIC will have sent everything handed to it
}

// NewBacklog makes an estimator for a link of bitsPerSecond.
func NewBacklog(bitsPerSecond float64) Backlog {
	return Backlog{psPerByte: uint64(8e12 / bitsPerSecond)}
}

// WireTime is the link time of one frame of n bytes, in ns.
func (b *Backlog) WireTime(n int) int64 {
	return int64(uint64(max(n, minFrame)+wireOverhead) * b.psPerByte / 1000)
}

// Queued is the estimated backlog at time now, in ns of link time.
func (b *Backlog) Queued(now int64) int64 { return max(b.busyUntil-now, 0) }

// Sent records that a frame of n bytes was handed to the NIC at now.
func (b *Backlog) Sent(now int64, n int) {
	b.busyUntil = max(b.busyUntil, now) + b.WireTime(n)
}

// Room reports whether the backlog at now is below limit ns.
func (b *Backlog) Room(now, limit int64) bool { return b.Queued(now) < limit }

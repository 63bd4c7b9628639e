package sched

// ThrottleMinBytes: packets of a message with fewer unsent bytes than this
// are never deferred by the pacer (kernel throttle_min_bytes, 1000).
const ThrottleMinBytes = 1000

// WireOverhead is the per-frame link time not in the frame bytes:
// preamble and start delimiter (8), frame check sequence (4) and
// inter-frame gap (12), in bytes.
const WireOverhead = 24

// Pacer estimates the NIC's transmit backlog in link time and says when a
// packet may be handed to the NIC, so that a short message never waits
// behind a long one inside the NIC queue (kernel homa_check_nic_queue).
// Owned by one goroutine; no allocation.
type Pacer struct {
	linkBps  int64      // link rate in bits per second; 0 = unpaced
	maxQueue int64      // ns of link time the NIC may hold (max_nic_queue_us)
	idleAt   int64      // ns: when the NIC will have sent everything handed to it
	clock    *LinkClock // shared with the port's other shards (Share); nil: idleAt
}

// Share makes p pace the link that c stands for, with the pacers of the
// port's other shards (share.go): they advance one clock.
func (p *Pacer) Share(c *LinkClock) { p.clock = c }

// idle is when the NIC will have sent everything handed to it.
func (p *Pacer) idle() int64 {
	if p.clock != nil {
		return p.clock.idleAt.Load()
	}
	return p.idleAt
}

// NewPacer returns a pacer for a link of linkBps bits per second that lets
// at most maxNICQueueNs of link time queue in the NIC. A linkBps of 0
// disables pacing.
func NewPacer(linkBps, maxNICQueueNs int64) *Pacer {
	return &Pacer{linkBps: linkBps, maxQueue: maxNICQueueNs}
}

// Backlog returns the estimated link time, in ns, of the bytes the NIC
// still holds at time now.
func (p *Pacer) Backlog(now int64) int64 { return max(p.idle()-now, 0) }

// CanSend reports whether a packet may go to the NIC now: the backlog is
// at most the limit (the packet may then push it over, as in the kernel).
func (p *Pacer) CanSend(now int64) bool {
	return p.linkBps == 0 || p.idle()-now <= p.maxQueue
}

// ReadyAt returns the earliest time at or after now when CanSend is true.
func (p *Pacer) ReadyAt(now int64) int64 {
	if p.CanSend(now) {
		return now
	}
	return p.idle() - p.maxQueue
}

// Sent records a frame of frameBytes handed to the NIC at time now
// (forced or not).
func (p *Pacer) Sent(now int64, frameBytes int) {
	if p.linkBps == 0 {
		return
	}
	tx := p.TxTime(frameBytes)
	if c := p.clock; c != nil {
		for {
			old := c.idleAt.Load()
			if c.idleAt.CompareAndSwap(old, max(old, now)+tx) {
				return
			}
		}
	}
	p.idleAt = max(p.idleAt, now) + tx
}

// TxTime returns the link time, in ns, of a frame of frameBytes,
// WireOverhead included (rounded up).
func (p *Pacer) TxTime(frameBytes int) int64 {
	if p.linkBps == 0 {
		return 0
	}
	bits := int64(frameBytes+WireOverhead) * 8
	return (bits*1_000_000_000 + p.linkBps - 1) / p.linkBps
}

// Exempt reports whether a packet of a message with remaining unsent
// bytes bypasses the pacer at the default threshold (remaining <
// ThrottleMinBytes); the engine's is configurable (PacerThreshold).
func Exempt(remaining int) bool { return remaining < ThrottleMinBytes }

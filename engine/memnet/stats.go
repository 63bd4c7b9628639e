package memnet

import "strconv"

// DropCause says why the network dropped a frame. Stats counts drops in
// an array indexed by it.
type DropCause uint8

// Causes of drops.
const (
	DropLoss        DropCause = iota // random loss (Config.Loss)
	DropBufferFull                   // tail drop: the egress port's buffer was full
	DropPartition                    // sender or receiver partitioned
	DropUnparseable                  // not an Ethernet frame carrying valid IPv4
	DropRestart                      // queued at, for, or by a host that restarted
	DropInjected                     // taken by a DropNext rule
	DropNoRoute                      // no host has the IPv4 destination
	NumDropCauses                    // size of per-cause arrays
)

var dropCauseNames = [NumDropCauses]string{
	"loss", "buffer_full", "partition", "unparseable", "restart", "injected", "no_route",
}

// String returns a snake_case name for c, as used in traces.
func (c DropCause) String() string {
	if c < NumDropCauses {
		return dropCauseNames[c]
	}
	return "unknown"
}

// counters are the network-wide counts behind Stats.
type counters struct {
	sent, sentBytes           uint64
	delivered, deliveredBytes uint64
	dropped                   [NumDropCauses]uint64
	duplicated, reordered     uint64
}

// Stats is a snapshot of the network's counters. When the network is
// idle, Sent + Duplicated == Delivered + TotalDropped().
type Stats struct {
	Sent, SentBytes           uint64                // frames and bytes passed to Host.Send
	Delivered, DeliveredBytes uint64                // frames and bytes handed to receivers
	Dropped                   [NumDropCauses]uint64 // frames dropped, per cause
	Duplicated                uint64                // extra copies made by the duplicate fault
	Reordered                 uint64                // frames held back by the reorder fault
	Ports                     []PortStats           // one per host, in AddHost order
}

// PortStats are the high-water marks of one host's two queues. Depths
// count the frames held: those waiting plus the one being serialized.
type PortStats struct {
	IP                [4]byte // the host
	MaxQueueBytes     int     // switch egress port toward the host, bytes
	MaxQueueFrames    int     // switch egress port toward the host, frames
	NICMaxQueueBytes  int     // the host's NIC, bytes
	NICMaxQueueFrames int     // the host's NIC, frames
	QueueBytes        int     // switch egress port toward the host, bytes held now
	NICQueueBytes     int     // the host's NIC, bytes held now
}

// TotalDropped returns the drops of all causes.
func (s *Stats) TotalDropped() uint64 {
	var t uint64
	for _, d := range s.Dropped {
		t += d
	}
	return t
}

// Stats returns a snapshot of the counters. It allocates the Ports slice.
func (n *Network) Stats() Stats {
	c := &n.counts
	s := Stats{
		Sent: c.sent, SentBytes: c.sentBytes,
		Delivered: c.delivered, DeliveredBytes: c.deliveredBytes,
		Dropped:    c.dropped,
		Duplicated: c.duplicated, Reordered: c.reordered,
		Ports: make([]PortStats, len(n.hosts)),
	}
	for i, h := range n.hosts {
		s.Ports[i] = PortStats{
			IP:            h.ip,
			MaxQueueBytes: h.egress.maxBytes, MaxQueueFrames: h.egress.maxFrames,
			NICMaxQueueBytes: h.nic.maxBytes, NICMaxQueueFrames: h.nic.maxFrames,
			QueueBytes: h.egress.bytes, NICQueueBytes: h.nic.bytes,
		}
	}
	return s
}

// SetTrace sets a function that receives one line per event of interest,
// or turns tracing off (nil):
//
//	t=2900 h1->h2 DATA p7 1500B              delivered at t
//	t=1450 h1->h2 DATA p7 1500B drop loss    dropped at t, with the cause
//	t=1450 h1->h2 DATA p7 1500B dup          a duplicate made at t
//	t=1450 h1->h2 DATA p7 1500B reorder      held back at t
//
// The type is the Homa packet type, IP for other IPv4, ? for frames that
// are not IPv4; the receiver is ? until the switch has routed the frame.
// Tracing allocates a string per line; leave it off in benchmarks.
func (n *Network) SetTrace(f func(line string)) { n.trace = f }

// traceFrame emits a trace line about p with an optional suffix.
func (n *Network) traceFrame(p *packet, what string) {
	if n.trace == nil {
		return
	}
	b := append(n.tbuf[:0], "t="...)
	b = strconv.AppendInt(b, n.now, 10)
	b = append(b, ' ')
	b = append(b, p.from.name...)
	b = append(b, "->"...)
	if p.to != nil {
		b = append(b, p.to.name...)
	} else {
		b = append(b, '?')
	}
	switch {
	case p.typ != 0:
		b = append(b, ' ')
		b = append(b, p.typ.String()...)
	case p.ok:
		b = append(b, " IP"...)
	default:
		b = append(b, " ?"...)
	}
	b = append(b, " p"...)
	b = strconv.AppendUint(b, uint64(p.prio), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(p.buf)), 10)
	b = append(b, 'B')
	if what != "" {
		b = append(b, ' ')
		b = append(b, what...)
	}
	n.tbuf = b
	n.trace(string(b))
}

package host

import (
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
)

// The port's link, as the loop sees it. A port whose link is down is not
// polled: no RX burst, and what waits for the TX queues is dropped and
// counted (the peer is gone: holding packets would hold their mbufs, and
// the workers' arenas that zero-copy DATA points into, until it returns;
// Homa retransmits what matters). The loop reads the link every
// linkCheckEvery, one cgo call; a burst made between the link going down
// and the next check finds the driver refusing it (net_memif tests its
// connection on entry; the burst guard in dpdk/ covers one already past
// that test).
//
// A port with Config.Redial (a net_memif client, which never dials its
// server again by itself) is restarted while its link is down, first
// redialFirst after the link went down, then with the wait doubling up to
// redialMax (each failed dial logs a line of DPDK's).
const (
	linkCheckEvery = int64(10 * time.Millisecond)
	redialFirst    = int64(20 * time.Millisecond)
	redialMax      = int64(time.Second)
)

// LinkCounters are what the host saw of its port's link.
type LinkCounters struct {
	Up             bool   // at the last check
	Downs, Ups     uint64 // changes seen
	Redials        uint64 // restarts of the port begun while its link was down
	RedialFailures uint64 // of those: the port did not start (no server yet)
	TxDropped      uint64 // packets dropped because the link was down
}

// linkState is the loop's view of the link; the loop's thread only.
type linkState struct {
	LinkCounters
	redial     bool  // restart the port while the link is down
	nextCheck  int64 // ns
	nextRedial int64 // ns
	backoff    int64 // ns to wait after the next redial
}

// Link returns the link counters (read them on the loop's thread or after
// it stopped; Snapshot has them for other threads).
func (h *Host) Link() LinkCounters { return h.portLink.LinkCounters }

// checkLink reads the link when due, counts changes and redials.
func (h *Host) checkLink() {
	if h.now < h.portLink.nextCheck {
		return
	}
	l := &h.portLink
	l.nextCheck = h.now + linkCheckEvery
	if l.redial {
		// A finished redial sets the port's started state before the
		// link is read: a port that came up is polled at once.
		if pending, err := h.port.RedialResult(); !pending && err != nil {
			l.RedialFailures++
		}
	}
	up := h.port.LinkUp()
	switch {
	case up && !l.Up:
		l.Up = true
		l.Ups++
	case !up && l.Up:
		l.Up = false
		l.Downs++
		l.nextRedial, l.backoff = h.now+redialFirst, redialFirst
	}
	if !up && l.redial && h.now >= l.nextRedial {
		if h.port.Redial(0) == nil {
			l.Redials++
		}
		l.nextRedial = h.now + l.backoff
		l.backoff = min(2*l.backoff, redialMax)
	}
}

// dropLinkDown is the fate of a queued packet while the link is down.
func (h *Host) dropLinkDown(m *dpdk.Mbuf) {
	h.portLink.TxDropped++
	h.free = append(h.free, m)
}

package host

import (
	"sync"
	"time"

	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/nicq"
)

// PublishEvery is how often a loop copies its counters for readers on
// other threads (ns).
const PublishEvery = int64(100 * time.Millisecond)

// Snapshot is one host's counters as its loop last published them.
type Snapshot struct {
	Engine     engine.Metrics
	RxDrops    [numRxDrops]uint64 // by cause, labelled by RxDropNames
	Stack      StackCounters
	NoBuffer   uint64    // buffers refused to the engine: the pool was empty
	Busy       uint64    // buffers refused to the engine: the TX queues were backed up
	Faults     [3]uint64 // injected: dropped, duplicated, reordered
	Queues     []nicq.QueueStats
	CapDropped uint64 // packets the capture writer could not keep up with
	// Chained frames received: parsed in place (headers and payload in
	// two segments, nothing copied), or joined into one buffer first.
	RxChainedInPlace, RxChainedJoined uint64
	// Neighbours are the neighbour tables' counters, IPv4 (ARP) and IPv6
	// (neighbour discovery) together.
	Neighbours NeighbourCounters
	Link       LinkCounters
}

// snapshotBox hands counters from the loop to readers. The loop only ever
// TryLocks it, so a reader can delay a publication but never stall the
// loop.
type snapshotBox struct {
	mu   sync.Mutex
	snap Snapshot
}

// PublishSnapshots makes the loop publish its counters every PublishEvery
// for Snapshot; call it before the loop starts.
func (h *Host) PublishSnapshots() {
	h.box = &snapshotBox{snap: Snapshot{Queues: make([]nicq.QueueStats, len(h.txBufs))}}
}

// Snapshot returns the counters last published (zero before the first
// publication, or without PublishSnapshots). Any thread.
func (h *Host) Snapshot() Snapshot {
	if h.box == nil {
		return Snapshot{}
	}
	h.box.mu.Lock()
	s := h.box.snap
	s.Queues = append([]nicq.QueueStats(nil), s.Queues...)
	h.box.mu.Unlock()
	return s
}

// publish copies the loop's counters into the box when it is free. It
// runs on the loop's thread and allocates nothing.
func (h *Host) publish() {
	if h.box == nil || h.now < h.nextPublish {
		return
	}
	h.nextPublish = h.now + PublishEvery
	if !h.box.mu.TryLock() {
		return
	}
	s := &h.box.snap
	s.Engine = h.ep.Metrics()
	s.RxDrops, s.Stack = h.drops, h.stack
	s.RxChainedInPlace, s.RxChainedJoined = h.splitFrames, h.joinedFrames
	s.NoBuffer, s.Busy = h.tx.NoBuffer, h.tx.Busy
	s.Faults = [3]uint64{h.fault.Dropped, h.fault.Duplicated, h.fault.Reordered}
	for q := range s.Queues {
		s.Queues[q] = h.sched.Stats(q)
	}
	if h.cap != nil {
		s.CapDropped = h.cap.Dropped()
	}
	s.Neighbours = h.neigh.NeighbourCounters.add(h.neigh6.NeighbourCounters)
	s.Link = h.portLink.LinkCounters
	h.box.mu.Unlock()
}

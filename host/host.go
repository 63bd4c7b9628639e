package host

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
	"golang.org/x/sys/unix"
)

// Host is one Homa host on one DPDK port, run by a polling loop: the
// shape of DPDK's l3fwd — RX burst, process, run timers and the pacer, TX
// burst per priority queue, free or count what the NIC did not take.
// Everything here is owned by the loop's thread: call Pass (or PassAt, or
// a Pipeline's Pass) and Drain from it only.
type Host struct {
	port    *dpdk.Port
	me      hostAddr
	ep      *engine.Endpoint
	neigh   *neighbourTable[[4]byte]
	neigh6  *neighbourTable[[16]byte] // IPv6 next hops (neighbour discovery)
	tx      *mbufTx
	sched   *nicq.Scheduler[*dpdk.Mbuf]
	cap     *dpdk.Capture // nil when capture is off
	capIf   int           // this port's interface in the capture
	capRxAt int64         // when the pass's burst arrived (Unix ns), for the capture
	fault   faultInjector
	// The receive copier (copier.go): retainSeq is the copy the frame
	// being dispatched handed over (0: none), retainedFrames the frames
	// kept for copies not done yet, in order; copyInLoop forbids
	// handing over copies of a frame the host does not keep.
	copier         *CopyLane
	retainSeq      uint64
	retainedFrames []retained
	copyInLoop     bool

	rx     dpdk.Batch     // every RX queue of the port, polled in one cgo call
	rxBufs [][]*dpdk.Mbuf // one burst per RX queue
	txb    dpdk.Batch     // one entry per TX queue
	txBufs [][]*dpdk.Mbuf
	// txPending: txb holds bursts that prepareTx built and the next
	// crossing sends; txAt is the time they were built (ns).
	txPending bool
	txAt      int64
	// TX completions' cleanup (cleanupTx): the port's first TX queue,
	// the next time the loop may ask, whether the driver cannot, and how
	// often it was asked.
	txQueueBase  uint16
	txCleanupAt  int64
	txCleanupOff bool
	txCleanups   uint64
	free         []*dpdk.Mbuf // freed together in the next crossing into C
	scratch      []byte       // a chained frame made contiguous
	// Chained frames received: parsed in their two pieces (splitFrames),
	// or copied into scratch first (joinedFrames).
	splitFrames, joinedFrames uint64
	link                      wire.Link    // the link header of the frame being dispatched
	arpBuf                    []*dpdk.Mbuf // one mbuf for an ARP request
	now                       int64        // monotonic ns, read once per pass
	clock                     func() int64 // monotonic ns
	wallOff                   int64        // add to now for Unix ns (capture timestamps)
	apps                      []App        // in-loop applications (the demo, the worker hub)

	stack    StackCounters
	drops    [numRxDrops]uint64
	portLink linkState // the port's link as the loop sees it (link.go)
	// stopSending (StopSending, any thread) makes the loop drop what
	// waits for the TX queues, counted in stopDrops.
	stopSending atomic.Bool
	stopDrops   uint64

	// A shard of a port (shard.go): the port's shards, this one's index,
	// and what it handed the others. nil: the port's only host.
	shards   *ShardSet
	shardIdx int
	handed   HandOff

	box         *snapshotBox // counters published for the metrics endpoint, or nil
	nextPublish int64

	pcp      bool         // frames carry an 802.1Q tag on vlan (priority marking pcp)
	vlan     uint16       //
	subnet   netip.Prefix // this port's subnet (invalid: every address is on-link)
	gateway  [4]byte      // next hop off the subnet; zero for none
	subnet6  netip.Prefix // the IPv6 on-link prefix (invalid: every IPv6 address on-link)
	gateway6 [16]byte     // IPv6 next hop off it; zero for none
	noRoute  uint64       // resolutions refused: off the subnet with no gateway
}

// App is an application in a host's polling loop. Its methods run on the
// loop's thread.
type App interface {
	// Poll runs once per pass, after the received burst went to the
	// engine and before its timers; it returns the work it did (for the
	// loop's idle strategy).
	Poll(now int64) int
	// Flush runs once per pass after the engine's timers, so that results
	// of this pass leave in this pass.
	Flush()
	// Stop runs once at Drain, after the host's queues were emptied.
	Stop()
}

// AppFunc is an App of one function, run at Poll.
type AppFunc func(now int64)

func (f AppFunc) Poll(now int64) int { f(now); return 0 }
func (AppFunc) Flush()               {}
func (AppFunc) Stop()                {}

// AddApp adds an in-loop application; call it before the loop starts.
func (h *Host) AddApp(a App) { h.apps = append(h.apps, a) }

// Endpoint is the host's Homa engine; use it from the loop's thread only
// (an App), or before the loop starts.
func (h *Host) Endpoint() *engine.Endpoint { return h.ep }

// IP is the host's IPv4 address.
func (h *Host) IP() [4]byte { return h.me.ip }

// Addr is the host's IPv4 address, or its IPv6 one on an IPv6-only port.
func (h *Host) Addr() netip.Addr {
	if h.me.ip == [4]byte{} && h.me.ip6 != [16]byte{} {
		return netip.AddrFrom16(h.me.ip6)
	}
	return netip.AddrFrom4(h.me.ip)
}

// Addr6 returns the host's IPv6 address, or the zero Addr when it has none.
func (h *Host) Addr6() netip.Addr {
	if h.me.ip6 == [16]byte{} {
		return netip.Addr{}
	}
	return netip.AddrFrom16(h.me.ip6)
}

// Port is the host's DPDK port.
func (h *Host) Port() *dpdk.Port { return h.port }

// Now is the time of the current pass (monotonic ns).
func (h *Host) Now() int64 { return h.now }

// Clock is the host's monotonic clock (ns).
func (h *Host) Clock() int64 { return h.clock() }

// Stack returns the ARP/ICMP counters (read them on the loop's thread or
// after it stopped).
func (h *Host) Stack() StackCounters { return h.stack }

// TxQueues is the number of TX queues the host sends on.
func (h *Host) TxQueues() int { return len(h.txBufs) }

// Pass is one turn of the loop; it returns the packets and submissions it
// handled.
func (h *Host) Pass() int { return h.PassAt(h.clock()) }

// PassAt is a pass at time now (monotonic ns) that sends what it produced
// before it returns: two crossings into C, one to receive and one to send
// and free. A loop that runs a host on its own, or several hosts, saves
// one of them with a Pipeline (pipeline.go), which sends a pass's output
// in the next pass's crossing. Drive a host by PassAt or by a Pipeline,
// not both.
func (h *Host) PassAt(now int64) int {
	n := h.stage(h, now) // nothing is pending: the crossing only receives
	return n + h.sendPrepared()
}

// work is the middle of a pass, after the received burst went to the
// engine: the applications, the engine's timers, ARP retries and the
// counters' publication. It returns the applications' work.
func (h *Host) work() int {
	n := 0
	h.pollCopies() // messages whose copies are done reach the applications now
	for _, a := range h.apps {
		n += a.Poll(h.now)
	}
	if h.now >= h.ep.NextDeadline() {
		h.ep.Run()
	}
	for _, a := range h.apps {
		a.Flush()
	}
	h.neigh.Retries(h.now, h.sendARPRequest)
	h.neigh6.Retries(h.now, h.sendSolicit)
	h.publish()
	return n
}

// prepareTx builds each TX queue's burst, highest priority first, for the
// next crossing into C (sendPrepared, or the next stage of a Pipeline),
// and records it in the capture. While the link is down, or once
// StopSending was called, it drops what waits instead.
func (h *Host) prepareTx() {
	if h.sched.Len() == 0 { // most passes of an idle or receiving loop
		return
	}
	if !h.portLink.Up {
		h.sched.Drain(h.dropLinkDown)
		return
	}
	if h.stopSending.Load() {
		h.sched.Drain(h.dropStopping)
		return
	}
	h.sched.Fill(h.now)
	total := 0
	var capAt int64 // the bursts' time in the capture: when they were built
	if h.cap != nil {
		capAt = h.clock() + h.wallOff
	}
	for q := range h.txBufs {
		b := h.sched.Burst(q)
		copy(h.txBufs[q], b)
		h.txb.SetCount(q, len(b))
		total += len(b)
		if h.cap != nil && len(b) > 0 {
			h.cap.RecordMbufs(h.capIf, dpdk.Outbound, capAt, b)
		}
	}
	// Nothing to send: the NIC backlog holds every paced packet back.
	h.txPending, h.txAt = total > 0, h.now
}

// sendPrepared sends what prepareTx built and frees the mbufs the host is
// done with, in one crossing into C, and returns the packets the NIC
// took. What the NIC refused is queued again (or, with no room, dropped
// into the free list, freed at the next crossing).
func (h *Host) sendPrepared() int {
	var tx *dpdk.Batch
	if h.txPending {
		tx = &h.txb
	}
	tx.TxFreeRx(h.free, nil)
	clear(h.free)
	h.free = h.free[:0]
	n := h.completeTx()
	h.reapTx()
	return n
}

// completeTx reports to the TX scheduler what each queue took of the
// bursts prepareTx built, once the crossing sent them, and returns the
// packets taken.
func (h *Host) completeTx() int {
	if !h.txPending {
		return 0
	}
	h.txPending = false
	total := 0
	for q := range h.txBufs {
		got := h.txb.Got(q)
		total += got
		h.sched.Taken(q, got, h.txAt, h.dropTx)
	}
	return total
}

func (h *Host) dropTx(m *dpdk.Mbuf) { h.free = append(h.free, m) }

// reapTx drops the host's reference to each frame the device has let go
// of (nicq's TX completions; the crossing took one for each frame sent,
// dpdk.Batch.HoldSent): the mbuf goes back to its pool at the next
// crossing, and with it a zero-copy payload's hold on the worker's
// memory (PayloadSent). The engine's TxDone counts the frame only now.
// It runs once after each crossing that sent or freed frames of the
// host's (stage, sendPrepared): a device that copies a frame when it
// takes it (memif, af_packet, tap) has let go of it by then, and its
// mbuf goes back with the next crossing's frees, as the driver's own
// free would have sent it.
func (h *Host) reapTx() {
	if h.sched.InDevice() == 0 {
		return
	}
	h.sched.Reap(h.now, (*dpdk.Mbuf).Shared, h.dropTx)
	if h.txCleanupOff || h.now < h.txCleanupAt {
		return
	}
	h.txCleanupAt = h.now + txCleanupAfter
	for q := range h.txBufs {
		if at, ok := h.sched.HeldSince(q); ok && h.now-at >= txCleanupAfter {
			h.cleanupTx(q)
		}
	}
}

// txCleanupAfter is how long a frame the device holds waits before the
// host asks the driver to free what it has sent (cleanupTx), and how
// often it asks at most.
const txCleanupAfter = int64(100e3)

// cleanupTx asks the driver of TX queue q to free the frames it has sent
// (a NIC's frees them only when its ring needs room, so a quiet queue
// would keep its last frames, and their TX completions, for ever). A
// driver without the operation (the virtual devices) is not asked again.
func (h *Host) cleanupTx(q int) {
	h.txCleanups++
	if _, err := h.port.TxDoneCleanup(h.txQueueBase + uint16(q)); err != nil {
		var de *dpdk.Error
		if errors.As(err, &de) && de.Errno == int(unix.ENOTSUP) {
			h.txCleanupOff = true
		}
	}
}

func (h *Host) dropStopping(m *dpdk.Mbuf) {
	h.stopDrops++
	h.free = append(h.free, m)
}

// StopSending makes the loop drop, from its next pass on, what waits for
// the TX queues instead of sending it: for a stop that must not wait on
// a peer that takes no packets (gone, or no longer polling) while its
// workers' payloads, which it waits for, sit in those queues. Any thread.
func (h *Host) StopSending() { h.stopSending.Store(true) }

// Drain frees everything the host holds, at shutdown: call it on the
// loop's thread (lcore.Config.Drain) or after the loop stopped.
func (h *Host) Drain() {
	h.port.CancelRedial() // the port is stopped next, and not restarted behind it
	h.sendPrepared()      // what a Pipeline prepared for its next crossing
	h.prepareTx()
	h.sendPrepared()
	h.sched.Drain(h.dropTx)
	h.reapTx()
	h.sched.ReleaseInDevice(h.dropTx) // what a device still holds it frees when it lets go
	if held := h.fault.release(); held != nil {
		h.free = append(h.free, held)
	}
	h.drainHandOff()
	if h.copier != nil { // the frames its copies read
		h.copier.Settle()
		h.pollCopies()
	}
	dpdk.FreeBulk(h.free)
	h.free = h.free[:0]
	h.tx.close()
	for _, a := range h.apps { // last: the packets above may send from workers' arenas
		a.Stop()
	}
	h.tx.payloads.close()
}

func (h *Host) String() string {
	return fmt.Sprintf("host %v on port %d (%s)", h.Addr(), h.port.ID, h.port.Name)
}

// Summary is a one-line account of what the host counted: its own drops,
// the engine's drops and retransmissions, the transmit side's refusals and
// each TX queue's counters. For errors and the end of a run.
func (h *Host) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", h.Addr())
	for i, n := range h.drops {
		if n > 0 {
			fmt.Fprintf(&b, " rx_drop_%s=%d", RxDropNames[i], n)
		}
	}
	m := h.ep.Metrics()
	m.Each(func(name string, v uint64) {
		if v > 0 && (strings.HasPrefix(name, "drops_") || name == "resent_packets" || name == "rpc_timeouts" || name == "unknown_rpcs" || name == "timer_ticks_skipped" || strings.HasPrefix(name, "copies_") || name == "recv_bufs_held_for_copier" ||
			strings.HasPrefix(name, "data_bytes_") || name == "zero_copy_fallbacks") {
			fmt.Fprintf(&b, " %s=%d", name, v)
		}
	})
	if l := h.portLink; l.Downs > 0 {
		fmt.Fprintf(&b, " link_downs=%d link_ups=%d redials=%d redial_failures=%d tx_dropped_link_down=%d",
			l.Downs, l.Ups, l.Redials, l.RedialFailures, l.TxDropped)
	}
	if h.stopDrops > 0 {
		fmt.Fprintf(&b, " tx_dropped_stopping=%d", h.stopDrops)
	}
	fmt.Fprintf(&b, " tx_no_buffer=%d tx_busy=%d", h.tx.NoBuffer, h.tx.Busy)
	if h.txCleanups > 0 {
		fmt.Fprintf(&b, " tx_cleanups=%d", h.txCleanups)
	}
	if h.tx.SharedReplies > 0 {
		fmt.Fprintf(&b, " tx_shared_replies_copied=%d", h.tx.SharedReplies)
	}
	for q := range h.txBufs {
		st := h.sched.Stats(q)
		if st.Enqueued > 0 {
			fmt.Fprintf(&b, " q%d{sent=%d returned=%d dropped=%d max=%d in_device=%d late=%d}", q, st.Sent, st.Returned, st.Dropped, st.MaxDepth, st.InDevice, st.Late)
		}
	}
	return b.String()
}

// Offloads is what the host's port does for it.
func (h *Host) Offloads() Offloads {
	return Offloads{IPv4Checksum: h.tx.ipCksum, MultiSeg: h.tx.multiSeg}
}

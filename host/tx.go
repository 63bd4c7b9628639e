package host

import (
	"unsafe"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/engine"
	"github.com/homa-dpdk/homa-dpdk/nicq"
	"github.com/homa-dpdk/homa-dpdk/wire"
)

// mbufTx is the engine's transmit side on DPDK: it lends mbuf memory, so
// the engine writes each frame's headers and payload straight into the
// mbuf that the NIC sends (no copy), and queues the mbuf on the software
// queue of its priority's TX queue (nicq). It belongs to one polling loop.
type mbufTx struct {
	pool  *dpdk.Mempool
	stash []*dpdk.Mbuf // allocated in bursts; stash[:avail] are free to lend
	avail int
	lent  *dpdk.Mbuf // lent by Buffer, not yet passed to Send
	sched *nicq.Scheduler[*dpdk.Mbuf]
	// highWater is the number of packets waiting for the TX queues above
	// which Buffer refuses: the port is not keeping up (its TX queues
	// refuse bursts), so the engine keeps its DATA until the next pass
	// instead of filling the mempool with packets the port cannot take.
	highWater int
	// ipCksum marks each engine frame for IPv4 header checksum offload
	// (the engine then leaves the checksum 0); l2Len is the length of the
	// engine's Ethernet header (14, or 18 when it tags frames).
	ipCksum bool
	l2Len   int
	// multiSeg: the port sends chained mbufs (TxOffloadMultiSegs) and
	// needs no DMA mapping, so DATA payloads can go from a worker's arena
	// as external buffers (SendData).
	multiSeg bool
	// payloads are the external buffers of messages sent from workers'
	// memory, named to the engine by reference.
	payloads payloadTable

	NoBuffer uint64 // Buffer calls refused: the pool was empty
	Busy     uint64 // Buffer calls refused: the TX queues were backed up
	// SharedReplies counts answers to received frames copied because
	// the sender still held the received mbuf (enqueueReply).
	SharedReplies uint64
	// unsent counts, by priority, frames Send was given without a lent
	// mbuf (none went out): they have left as far as TxDone says.
	unsent [nicq.NumPriorities]uint64
}

// mbufTx is the engine's transmit side, with zero-copy DATA, and tells the
// engine which of its frames still wait in the software TX queues.
var (
	_ engine.DataSender = (*mbufTx)(nil)
	_ engine.TxProgress = (*mbufTx)(nil)
)

// TxDone is engine.TxProgress: the frames of priority prio that left the
// host (nicq.Scheduler.Done: taken by their NIC queue and let go of by
// its device, nicq's TX completions, or dropped). A frame waiting in the
// software queues, or in the device's ring, has not left; one the device
// held longer than nicq.DefaultMaxHold counts as gone. The host stack's
// own frames (ARP, ICMP) count at the highest priority: the engine then
// takes a little early that a frame of its own has left, and retransmits
// as it would without TxDone.
func (t *mbufTx) TxDone(prio int) uint64 {
	prio = min(max(prio, 0), nicq.NumPriorities-1)
	return t.sched.Done(prio) + t.unsent[prio]
}

func newMbufTx(pool *dpdk.Mempool, sched *nicq.Scheduler[*dpdk.Mbuf], burst, highWater int) *mbufTx {
	return &mbufTx{pool: pool, sched: sched, stash: make([]*dpdk.Mbuf, burst), highWater: highWater}
}

// take returns a free mbuf from the stash (refilling it), or nil.
func (t *mbufTx) take() *dpdk.Mbuf {
	if t.avail == 0 {
		if t.pool.AllocBulk(t.stash) != nil {
			t.NoBuffer++
			return nil
		}
		t.avail = len(t.stash)
	}
	t.avail--
	return t.stash[t.avail]
}

// Buffer lends the data room of a fresh mbuf, which holds a frame of the
// port's MTU with a VLAN tag (the pool is sized so:
// config.MempoolSpec.DataRoomFor), or nil when the pool is empty.
func (t *mbufTx) Buffer() []byte {
	if t.lent != nil { // the engine asked twice without sending: reuse
		return t.lent.Data()
	}
	if t.sched.Len() >= t.highWater {
		t.Busy++
		return nil
	}
	m := t.take()
	if m == nil {
		return nil
	}
	m.SetLen(m.DataLen() + m.Tailroom())
	t.lent = m
	return m.Data()
}

// Send queues the lent mbuf, trimmed to the frame, at priority prio. The
// engine paces its own DATA, so nothing is held back here for the NIC
// backlog; nicq keeps strict priority between the TX queues.
func (t *mbufTx) Send(frame []byte, prio int) {
	m := t.lent
	if m == nil {
		t.unsent[min(max(prio, 0), nicq.NumPriorities-1)]++
		return
	}
	t.lent = nil
	m.SetLen(len(frame))
	if t.ipCksum && isIPv4(frame, t.l2Len) {
		m.SetIPv4CksumOffload(t.l2Len, wire.IPv4MinHeaderLen) // the engine writes no IPv4 options
	}
	if !t.sched.Enqueue(m, prio, false) {
		m.Free() // counted by nicq as a drop on that queue
	}
}

// isIPv4 reports whether the engine's frame carries IPv4 (an IPv6 one
// has no header checksum: marking it would have the NIC write into its
// addresses).
func isIPv4(frame []byte, l2Len int) bool { return len(frame) > l2Len && frame[l2Len]>>4 == 4 }

// SendData is the engine's zero-copy send (engine.DataSender): the lent
// mbuf carries the headers (frame) and a second mbuf, attached to payload
// in the worker's arena as the external buffer that ref names (a
// reference from HoldPayload), is chained to it. The payload is not copied here; the port reads it when
// it transmits, and the ExtBuf counts when the last such packet is freed.
// It refuses (and the engine copies) when the port cannot send chains or
// no mbuf is free.
func (t *mbufTx) SendData(frame, payload []byte, ref engine.PayloadRef, prio int) bool {
	ext := t.payloads.ext(ref)
	if ext == nil || !t.multiSeg || t.lent == nil || len(payload) == 0 {
		return false
	}
	body := t.take()
	if body == nil {
		return false
	}
	iova := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(payload)))) // virtual devices: no DMA, the address is enough
	m := t.lent
	m.SetLen(len(frame))
	if !m.AttachChain(body, payload, iova, ext) { // one C call per packet
		body.Free()
		m.SetLen(m.DataLen() + m.Tailroom()) // still lent: the engine copies instead
		return false
	}
	t.lent = nil
	if t.ipCksum && isIPv4(frame, t.l2Len) {
		m.SetIPv4CksumOffload(t.l2Len, wire.IPv4MinHeaderLen)
	}
	if !t.sched.Enqueue(m, prio, false) {
		m.Free() // the chain; counted by nicq as a drop on that queue
	}
	return true
}

// enqueue queues an mbuf the host stack built or rewrote (ARP, ICMP) at
// the highest priority.
func (t *mbufTx) enqueue(m *dpdk.Mbuf) {
	m.SetOlFlags(0) // a received mbuf's RX flags mean nothing on TX; these carry software checksums
	if !t.sched.Enqueue(m, nicq.NumPriorities-1, false) {
		m.Free()
	}
}

// enqueueReply queues a received frame the host stack rewrote into its
// answer (an ARP reply, an ICMP echo reply), in place unless another
// reference holds the mbuf: on a ring pair, the peer that sent it keeps
// one until it sees that its frame was let go of (TX completions), and
// sending the same mbuf back would have each side wait on the other's
// reference for ever. Such a frame is copied into a fresh mbuf (counted
// in SharedReplies; NoBuffer when the pool is empty) and the received
// one freed.
func (t *mbufTx) enqueueReply(m *dpdk.Mbuf, free func(*dpdk.Mbuf)) {
	if !m.Shared() {
		t.enqueue(m)
		return
	}
	t.SharedReplies++
	if c := t.take(); c != nil {
		c.SetLen(0)
		copy(c.Append(m.DataLen()), m.Data())
		t.enqueue(c)
	}
	free(m)
}

// close frees the mbufs still stashed or lent.
func (t *mbufTx) close() {
	if t.lent != nil {
		t.lent.Free()
		t.lent = nil
	}
	dpdk.FreeBulk(t.stash[:t.avail])
	t.avail = 0
}

// SendFrame sends frame, a whole Ethernet frame the caller built, at Homa
// priority prio, for an in-loop application that speaks raw frames (a
// probe, a test's stranger); false when the transmit side lends no
// buffer (counted as for the engine's frames) or frame is longer than
// one (the lent buffer is kept for the next). Loop thread only; frame is
// copied, so it may be reused at once.
func (h *Host) SendFrame(frame []byte, prio int) bool {
	b := h.tx.Buffer()
	if b == nil || len(b) < len(frame) {
		return false
	}
	h.tx.Send(b[:copy(b, frame)], prio)
	return true
}

package dpdk

/*
// The burst functions never call back into Go.
#cgo nocallback homa_rx_bursts
#cgo nocallback homa_tx_bursts
#cgo nocallback homa_tx_rx_bursts
#cgo nocallback homa_tx_free_rx_bursts
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Batch is a set of bursts — (port, queue, mbuf array) entries — that RX
// or TX together with a single cgo call. A loop that polls several queues
// or sends on several TX queues (one per priority) pays one crossing into C
// per pass instead of one per queue. A Batch belongs to one thread.
//
// Each entry keeps the mbuf array given to Add. For RX, entry i receives
// into it up to its length; Got(i) tells how many arrived. For TX, the
// caller puts the packets at the start of the array and sets their number
// with SetCount; Got(i) then tells how many the queue took.
type Batch struct {
	// Prefetch makes Rx prefetch each received packet's first data cache
	// line, as l2fwd does for physical NICs. On virtual devices, whose
	// packets are already in cache, it costs more than it saves (measured
	// with perf pmd on net_null), so it is off by default.
	Prefetch bool
	// HoldSent keeps a reference to each packet a TX queue takes: the
	// crossing raises the reference count of each packet's segments
	// before the burst, and lowers it again for those the queue refused.
	// The caller owns one reference to each packet taken (Pkts), drops it
	// with a free, and learns that the driver (or a ring pair's peer)
	// has let go of the packet when it is no longer Shared: the TX
	// completion (nicq.Config.TrackCompletions).
	HoldSent bool

	ents  []C.struct_homa_burst // Go memory holding only integers
	ports []*Port
	bufs  [][]*Mbuf
	count []uint16 // TX: packets to send, per entry
}

// Add appends an entry and returns its index. pkts must not be resized
// afterwards (its array is what the driver reads or fills).
func (b *Batch) Add(p *Port, queue uint16, pkts []*Mbuf) (int, error) {
	if len(pkts) == 0 || len(pkts) > 0xffff {
		return 0, fmt.Errorf("batch entry for port %d queue %d: %d mbuf slots, want 1..65535", p.ID, queue, len(pkts))
	}
	b.ents = append(b.ents, C.struct_homa_burst{
		port:  C.uint16_t(p.ID),
		queue: C.uint16_t(queue),
		pkts:  C.uintptr_t(uintptr(unsafe.Pointer(unsafe.SliceData(pkts)))),
	})
	b.ports = append(b.ports, p)
	b.bufs = append(b.bufs, pkts)
	b.count = append(b.count, 0)
	return len(b.ents) - 1, nil
}

// Len is the number of entries.
func (b *Batch) Len() int { return len(b.ents) }

// Pkts returns entry i's mbufs handled by the last Rx (received) or Tx
// (taken by the queue).
func (b *Batch) Pkts(i int) []*Mbuf { return b.bufs[i][:b.ents[i].done] }

// Got is how many mbufs the last Rx received, or the last Tx sent, on
// entry i.
func (b *Batch) Got(i int) int { return int(b.ents[i].done) }

// SetCount sets how many packets, from the start of entry i's array, the
// next Tx sends.
func (b *Batch) SetCount(i, n int) { b.count[i] = uint16(min(n, len(b.bufs[i]))) }

// Rx receives on every entry in one cgo call and returns the total. An
// entry whose port is not started receives nothing and is counted there
// (Stats.RxNotStarted).
func (b *Batch) Rx() int {
	if len(b.ents) == 0 {
		return 0
	}
	b.prepareRx()
	pf := 0
	if b.Prefetch {
		pf = 1
	}
	return int(C.homa_rx_bursts(b.addr(), C.uint(len(b.ents)), C.int(pf)))
}

// Tx sends every entry's SetCount packets in one cgo call. What a queue
// does not take stays in the entry's array, after Got(i), for the caller
// to retry or free. An entry whose port is not started sends nothing and
// is counted there (Stats.TxNotStarted).
func (b *Batch) Tx() { b.tx(false) }

// TxFreeRx is a pipelined loop's crossing into C, one cgo call for a
// pass's I/O: it sends b's SetCount packets (as Tx: what a queue does not
// take stays in the entry's array, after Got(i), for the caller), frees
// free (mbufs a pass is done with), and then receives on rx (as Rx). The
// sends complete before the receives start, so frames sent to a port of
// rx over a synchronous link (a ring pair) are received in this call.
// b or rx may be nil, free empty; with nothing to send, free or receive
// it does not cross. It returns the packets received.
func (b *Batch) TxFreeRx(free []*Mbuf, rx *Batch) int {
	var ntx, nrx int
	if b != nil {
		if _, n := b.prepareTx(false); n > 0 {
			ntx = len(b.ents)
		}
	}
	if rx != nil && len(rx.ents) > 0 {
		rx.prepareRx()
		nrx = len(rx.ents)
	}
	if ntx == 0 && nrx == 0 && len(free) == 0 {
		return 0
	}
	var txAddr, rxAddr C.uintptr_t
	if ntx > 0 {
		txAddr = b.addr()
	}
	pf := 0
	if nrx > 0 {
		rxAddr = rx.addr()
		if rx.Prefetch {
			pf = 1
		}
	}
	return int(C.homa_tx_free_rx_bursts(txAddr, C.uint(ntx), sliceAddr(free), C.uint(len(free)),
		rxAddr, C.uint(nrx), C.int(pf)))
}

// TxOrFree is Tx, except that what a queue does not take is freed (in the
// same cgo call); it returns how many were freed.
func (b *Batch) TxOrFree() int { return b.tx(true) }

func (b *Batch) tx(free bool) int {
	if len(b.ents) == 0 {
		return 0
	}
	freed, n := b.prepareTx(free)
	if n == 0 { // nothing to send: no crossing into C (Got is 0 everywhere)
		return freed
	}
	f := 0
	if free {
		f = 1
	}
	return freed + int(C.homa_tx_bursts(b.addr(), C.uint(len(b.ents)), C.int(f)))
}

func (b *Batch) addr() C.uintptr_t {
	return C.uintptr_t(uintptr(unsafe.Pointer(unsafe.SliceData(b.ents))))
}

// prepareTx loads each entry's count for a Tx (returning their sum) and sets aside (counting,
// and freeing when asked) the packets of ports that are not started.
func (b *Batch) prepareTx(free bool) (freed, n int) {
	for i := range b.ents {
		e := &b.ents[i]
		e.n = C.uint16_t(b.count[i])
		e.done = 0
		e.flags = 0
		if b.HoldSent {
			e.flags = C.HOMA_BURST_HOLD
		}
		b.count[i] = 0
		if e.n > 0 && !b.ports[i].started.Load() {
			b.ports[i].txNotStarted.Add(uint64(e.n))
			if free {
				FreeBulk(b.bufs[i][:e.n])
				freed += int(e.n)
			}
			e.n = 0
		}
		n += int(e.n)
	}
	return freed, n
}

// prepareRx loads each entry's room for an Rx, skipping (and counting)
// ports that are not started.
func (b *Batch) prepareRx() {
	for i := range b.ents {
		e := &b.ents[i]
		e.n = C.uint16_t(len(b.bufs[i]))
		if !b.ports[i].started.Load() {
			b.ports[i].rxNotStarted.Add(1)
			e.n = 0
		}
	}
}

// TxRx does a polling loop's I/O for one pass in a single cgo call: it
// sends tx (as TxOrFree: what a queue does not take is freed), then
// receives on rx. It returns the packets freed and the packets received.
// tx and rx may share mbuf arrays: the sends complete before the receives
// reuse the slots. Pipelining a loop this way (send the previous pass's
// output, then receive this pass's input) halves the cgo crossings of
// separate Tx and Rx calls.
func TxRx(tx, rx *Batch) (freed, received int) {
	freed, _ = tx.prepareTx(true)
	rx.prepareRx()
	pf := 0
	if rx.Prefetch {
		pf = 1
	}
	r := uint64(C.homa_tx_rx_bursts(tx.addr(), C.uint(len(tx.ents)), rx.addr(), C.uint(len(rx.ents)), C.int(pf)))
	return freed + int(r>>32), int(uint32(r))
}

package dpdk

/*
#include "shim.h"
*/
import "C"

import (
	"sync/atomic"
	"unsafe"
)

// Field access on rte_mbuf memory at the offsets from the DPDK headers.

func (m *Mbuf) u16(off uintptr) *uint16 { return (*uint16)(unsafe.Add(unsafe.Pointer(m), off)) }
func (m *Mbuf) u32(off uintptr) *uint32 { return (*uint32)(unsafe.Add(unsafe.Pointer(m), off)) }
func (m *Mbuf) u64(off uintptr) *uint64 { return (*uint64)(unsafe.Add(unsafe.Pointer(m), off)) }

func (m *Mbuf) dataPtr() *byte {
	base := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(m), offBufAddr))
	return (*byte)(unsafe.Add(base, *m.u16(offDataOff)))
}

func (m *Mbuf) nextSeg() *Mbuf {
	return *(**Mbuf)(unsafe.Add(unsafe.Pointer(m), offNext))
}

func loadU64(p *uint64) uint64 { return atomic.LoadUint64(p) }

// loadRefcnt reads the reference count atomically: the 32-bit word that
// holds it (with data_off), as other threads change it by atomic adds.
func (m *Mbuf) loadRefcnt() uint16 {
	w := atomic.LoadUint32(m.u32(offRefcnt &^ 3))
	return uint16(w >> (8 * (offRefcnt & 3)))
}

// sliceAddr is the address of the first element of a slice of C pointers,
// as an integer. The slices passed to the burst shims are Go memory holding
// only C pointers; a goroutine cannot move while it is inside a cgo call,
// and the garbage collector does not move heap objects, so the address
// stays valid for the call. Passing it as an integer avoids cgo's pointer
// check, which would scan the array on every burst.
func sliceAddr[T any](s []*T) C.uintptr_t {
	return C.uintptr_t(uintptr(unsafe.Pointer(unsafe.SliceData(s))))
}

// AllocBulk fills every slot of mbufs from the pool, or none: on failure it
// returns the pool's exhaustion error (which wraps ErrNoMbufs) without
// allocating. One C call.
func (p *Mempool) AllocBulk(mbufs []*Mbuf) error {
	if len(mbufs) == 0 {
		return nil
	}
	if C.homa_alloc_bulk(p.mp, sliceAddr(mbufs), C.uint(len(mbufs))) != 0 {
		return p.exhausted
	}
	return nil
}

// Alloc returns one mbuf, or nil when the pool is empty. One C call: use
// AllocBulk on hot paths.
func (p *Mempool) Alloc() *Mbuf {
	return (*Mbuf)(unsafe.Pointer(C.rte_pktmbuf_alloc(p.mp)))
}

// FreeBulk returns mbufs (which may come from different pools) to their
// pools. One C call.
func FreeBulk(mbufs []*Mbuf) {
	if len(mbufs) == 0 {
		return
	}
	C.homa_free_bulk(sliceAddr(mbufs), C.uint(len(mbufs)))
}

package dpdk

/*
#include <stdlib.h>
#include "shim.h"

static struct rte_ring *homa_ring_create(const char *name, unsigned count, int socket, unsigned flags, int *err) {
	struct rte_ring *r = rte_ring_create(name, count, socket, flags);
	*err = r == NULL ? rte_errno : 0;
	return r;
}

static struct rte_ring *homa_ring_lookup(const char *name, int *err) {
	struct rte_ring *r = rte_ring_lookup(name);
	*err = r == NULL ? rte_errno : 0;
	return r;
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// RingFlags choose a ring's producer and consumer modes.
type RingFlags uint

const (
	// RingSP: one producer thread at a time (RING_F_SP_ENQ).
	RingSP RingFlags = C.RING_F_SP_ENQ
	// RingSC: one consumer thread at a time (RING_F_SC_DEQ).
	RingSC RingFlags = C.RING_F_SC_DEQ
	// RingExactSize: the ring holds exactly count entries instead of
	// count-1 with count a power of two (RING_F_EXACT_SZ).
	RingExactSize RingFlags = C.RING_F_EXACT_SZ
)

// Ring is a DPDK lockless FIFO of pointers (rte_ring), visible by name to
// every thread and to secondary processes.
type Ring struct {
	r    *C.struct_rte_ring
	name string
}

// NewRing creates a ring of count slots (a power of two, holding count-1
// entries, unless RingExactSize) on a NUMA socket (SocketIDAny for any).
func NewRing(name string, count uint32, socket int, flags RingFlags) (*Ring, error) {
	if !Initialized() {
		return nil, ErrNotInitialized
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var errno C.int
	r := C.homa_ring_create(cname, C.uint(count), C.int(socket), C.uint(flags), &errno)
	if r == nil {
		e := newError(fmt.Sprintf("create ring %q of %d slots", name, count), int(errno))
		if errno == C.EINVAL {
			e.Log = "the count must be a power of two (or use RingExactSize) and below 2^28"
		}
		return nil, e
	}
	return &Ring{r: r, name: name}, nil
}

// LookupRing finds a ring by name.
func LookupRing(name string) (*Ring, error) {
	if !Initialized() {
		return nil, ErrNotInitialized
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var errno C.int
	r := C.homa_ring_lookup(cname, &errno)
	if r == nil {
		return nil, newError(fmt.Sprintf("look up ring %q", name), int(errno))
	}
	return &Ring{r: r, name: name}, nil
}

// Name is the ring's name.
func (r *Ring) Name() string { return r.name }

// Count is the number of entries in the ring.
func (r *Ring) Count() int { return int(C.homa_ring_count(r.r)) }

// FreeCount is the number of free slots.
func (r *Ring) FreeCount() int { return int(C.homa_ring_free_count(r.r)) }

// Free destroys the ring.
func (r *Ring) Free() {
	if r.r != nil {
		C.rte_ring_free(r.r)
		r.r = nil
	}
}

// EnqueueBurst adds as many of objs as fit and returns how many. The
// pointers must be to C memory (mbufs, or other DPDK memory). One cgo call.
func (r *Ring) EnqueueBurst(objs []unsafe.Pointer) int {
	if len(objs) == 0 {
		return 0
	}
	return int(C.homa_ring_enqueue_burst(r.r, C.uintptr_t(uintptr(unsafe.Pointer(&objs[0]))), C.uint(len(objs))))
}

// DequeueBurst takes up to len(objs) entries into objs and returns how
// many. One cgo call.
func (r *Ring) DequeueBurst(objs []unsafe.Pointer) int {
	if len(objs) == 0 {
		return 0
	}
	return int(C.homa_ring_dequeue_burst(r.r, C.uintptr_t(uintptr(unsafe.Pointer(&objs[0]))), C.uint(len(objs))))
}

// EnqueueMbufs is EnqueueBurst for mbufs.
func (r *Ring) EnqueueMbufs(pkts []*Mbuf) int {
	if len(pkts) == 0 {
		return 0
	}
	return int(C.homa_ring_enqueue_burst(r.r, sliceAddr(pkts), C.uint(len(pkts))))
}

// DequeueMbufs is DequeueBurst for mbufs.
func (r *Ring) DequeueMbufs(pkts []*Mbuf) int {
	if len(pkts) == 0 {
		return 0
	}
	return int(C.homa_ring_dequeue_burst(r.r, sliceAddr(pkts), C.uint(len(pkts))))
}

// PortFromRings makes an ethdev port whose RX queue i reads ring rx[i] and
// whose TX queue i writes ring tx[i] (rte_eth_from_rings). Two ports built
// crosswise from the same rings form a wire: TX queue i of one arrives on
// RX queue i of the other.
func PortFromRings(name string, rx, tx []*Ring, socket int) (*Port, error) {
	if !Initialized() {
		return nil, ErrNotInitialized
	}
	if len(rx) == 0 || len(tx) == 0 {
		return nil, fmt.Errorf("port %q from rings: need at least one RX and one TX ring", name)
	}
	crx := (**C.struct_rte_ring)(C.malloc(C.size_t(len(rx)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	ctx := (**C.struct_rte_ring)(C.malloc(C.size_t(len(tx)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(crx))
	defer C.free(unsafe.Pointer(ctx))
	for i, r := range rx {
		unsafe.Slice(crx, len(rx))[i] = r.r
	}
	for i, r := range tx {
		unsafe.Slice(ctx, len(tx))[i] = r.r
	}
	if socket < 0 {
		socket = 0
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	runtime.LockOSThread() // rte_errno is per thread
	defer runtime.UnlockOSThread()
	rc := C.homa_from_rings(cname, crx, C.uint(len(rx)), ctx, C.uint(len(tx)), C.uint(socket))
	if rc < 0 {
		return nil, newError(fmt.Sprintf("port %q from %d RX and %d TX rings", name, len(rx), len(tx)), int(C.homa_errno()))
	}
	return portFor(uint16(rc)), nil
}

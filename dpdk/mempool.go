package dpdk

/*
#include <stdlib.h>
#include "shim.h"

static struct rte_mempool *homa_pool_create(const char *name, unsigned n, unsigned cache,
		uint16_t data_room, int socket, int *err) {
	struct rte_mempool *mp = rte_pktmbuf_pool_create(name, n, cache, 0, data_room, socket);
	*err = mp == NULL ? rte_errno : 0;
	return mp;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// maxPoolName is the longest mempool name DPDK accepts.
const maxPoolName = C.RTE_MEMPOOL_NAMESIZE - 1 - (len(C.RTE_MEMPOOL_MZ_PREFIX) - 1)

// SocketIDAny lets DPDK pick the NUMA socket (SOCKET_ID_ANY).
const SocketIDAny = -1

// Mempool is a pool of packet mbufs (rte_pktmbuf_pool_create).
type Mempool struct {
	mp        *C.struct_rte_mempool
	name      string
	size      uint32
	exhausted error // returned, without allocating, when AllocBulk fails
}

// NewPktMbufPool creates a packet mbuf pool of n mbufs with a per-lcore
// cache of `cache` mbufs and dataRoom bytes of buffer per mbuf (headroom
// included; 2048+PktmbufHeadroom fits a 1500-byte MTU frame), on NUMA
// socket `socket` (SocketIDAny for any).
func NewPktMbufPool(name string, n, cache uint32, dataRoom uint16, socket int) (*Mempool, error) {
	if !Initialized() {
		return nil, ErrNotInitialized
	}
	op := fmt.Sprintf("create mbuf pool %q (%d mbufs, cache %d, data room %d, socket %d)", name, n, cache, dataRoom, socket)
	if len(name) > maxPoolName {
		return nil, fmt.Errorf("%s: the name is longer than %d bytes", op, maxPoolName)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: count must be positive", op)
	}
	if int(dataRoom) < PktmbufHeadroom {
		return nil, fmt.Errorf("%s: data room must be at least the headroom, %d bytes", op, PktmbufHeadroom)
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var errno C.int
	mp := C.homa_pool_create(cname, C.uint(n), C.uint(cache), C.uint16_t(dataRoom), C.int(socket), &errno)
	if mp == nil {
		return nil, newError(op, int(errno))
	}
	return &Mempool{
		mp:        mp,
		name:      name,
		size:      n,
		exhausted: fmt.Errorf("mbuf pool %q (%d mbufs): %w", name, n, ErrNoMbufs),
	}, nil
}

// Name is the pool's name.
func (p *Mempool) Name() string { return p.name }

// Size is the number of mbufs the pool was created with.
func (p *Mempool) Size() uint32 { return p.size }

// Avail is the number of free mbufs, per-lcore caches included.
func (p *Mempool) Avail() uint32 { return uint32(C.homa_mempool_avail(p.mp)) }

// InUse is the number of mbufs allocated and not yet freed.
func (p *Mempool) InUse() uint32 { return uint32(C.homa_mempool_in_use(p.mp)) }

// Free releases the pool. Every mbuf must have been freed first.
func (p *Mempool) Free() {
	if p.mp != nil {
		C.rte_mempool_free(p.mp)
		p.mp = nil
	}
}

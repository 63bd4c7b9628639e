package dpdk

/*
#cgo pkg-config: libdpdk
#cgo CFLAGS: -D_GNU_SOURCE -DALLOW_EXPERIMENTAL_API -O2
#cgo LDFLAGS: -lrte_net_ring -lrte_bus_vdev
#include "shim.h"
*/
import "C"

// Constants taken from the DPDK headers at build time.
const (
	// MaxLcore is RTE_MAX_LCORE of the DPDK build.
	MaxLcore = int(C.HOMA_MAX_LCORE)
	// MaxPorts is RTE_MAX_ETHPORTS of the DPDK build.
	MaxPorts = int(C.HOMA_MAX_ETHPORTS)
	// LcoreIDAny is the lcore id of a thread DPDK does not know.
	LcoreIDAny = uint(^uint32(0))
	// PktmbufHeadroom is RTE_PKTMBUF_HEADROOM: bytes reserved before the data
	// of a freshly allocated mbuf.
	PktmbufHeadroom = int(C.HOMA_PKTMBUF_HEADROOM)
)

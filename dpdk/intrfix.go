package dpdk

/*
#include <stdint.h>
void homa_intrfix_stats(uint64_t *stale, uint64_t *overflow);
int homa_intrfix_test_bound(void);
*/
import "C"

// Interrupt callbacks left registered on a freed handle. A net_memif
// server accepts each connection on EAL's interrupt thread
// (memif_listener_handler, drivers/net/memif/memif_socket.c): it
// registers a callback for the new control channel's fd, then sends
// HELLO. When that send fails — the client has already gone, which any
// process that connects and closes at once, or a memif client restarting
// quickly, brings about — the error path closes the fd and frees the
// channel and its interrupt handle, but leaves the callback registered.
// EAL keeps its own copy of the handle, so the interrupt thread goes on
// watching an fd number that is closed: when it next rebuilds its epoll
// set it panics ("Error adding fd N epoll_ctl, Bad file descriptor") and
// the whole process dies; had the number been reused first, the callback
// would run on the freed channel. DPDK 22.11.11 and later releases have
// this path unchanged.
//
// So the process's rte_intr_callback_register and its three unregister
// calls (intrfix.c replaces EAL's, which they call) keep a record of the
// registrations made on each handle, and rte_intr_instance_free first
// unregisters what is still registered on the handle it frees. A freed
// handle can never be used to unregister later, so a registration that
// outlives its handle is always such a leak (memif's listener socket,
// freed with its last device, is the other one).

// IntrFixStats are the counters of the interrupt-handle repair.
type IntrFixStats struct {
	// Unregistered counts callbacks unregistered when their handle was
	// freed (each a crash or a use-after-free avoided).
	Unregistered uint64
	// Overflow counts registrations that could not be recorded (more
	// than 1024 at once): those would not be repaired.
	Overflow uint64
}

// IntrFix returns the process's interrupt-handle repair counters.
func IntrFix() IntrFixStats {
	var s, o C.uint64_t
	C.homa_intrfix_stats(&s, &o)
	return IntrFixStats{Unregistered: uint64(s), Overflow: uint64(o)}
}

// intrFixBound reports whether the process's rte_intr_instance_free is
// the repair's (for the package's tests).
func intrFixBound() bool { return C.homa_intrfix_test_bound() == 1 }

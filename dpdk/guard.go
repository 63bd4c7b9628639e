package dpdk

/*
#include <stdint.h>
void homa_guard_stats(uint64_t *waits, uint64_t *timeouts);
void homa_guard_test_hold(void);
void homa_guard_test_release(int released);
int homa_guard_test_munmap(void);
*/
import "C"

// The burst guard. A net_memif port's peer can leave at any moment; memif
// then tears the connection down on EAL's interrupt thread
// (memif_disconnect, in drivers/net/memif/memif_socket.c): it clears the
// port's CONNECTED flag, closes the control channel and the queues'
// eventfds, and unmaps the shared regions (memif_free_regions: munmap,
// then rte_free of each region's descriptor). Nothing there waits for a
// burst: eth_memif_rx and eth_memif_tx test the flag once, on entry, and
// then read the rings and copy packets from and to the regions. A burst
// that passed the test just before the flag was cleared — one whose
// thread the kernel preempts there, on a loaded machine, for
// milliseconds — reads unmapped memory: SIGSEGV in rte_eth_rx_burst.
//
// So every burst this package makes (RxBurst, TxBurst, Batch, TxRx) runs
// inside the guard, and the process's munmap (guard.c replaces the C
// library's; DPDK's plugins bind to it) first waits for the bursts that
// were running when it was called. memif's teardown unmaps only after it
// cleared the flag, so a burst that read the flag set is waited for, and
// one that starts later sees it cleared and touches nothing; the regions'
// descriptors are freed after the unmap, so those wait too. A burst costs
// two more stores and a fence; an munmap, a look at RTE_MAX_LCORE slots.

// GuardStats are the burst guard's counters.
type GuardStats struct {
	// Waits counts unmappings that waited for running bursts.
	Waits uint64
	// Timeouts counts bursts still running after a second of waiting
	// (their thread stuck): the unmapping went ahead.
	Timeouts uint64
}

// BurstGuardStats returns the process's burst guard counters.
func BurstGuardStats() GuardStats {
	var w, t C.uint64_t
	C.homa_guard_stats(&w, &t)
	return GuardStats{Waits: uint64(w), Timeouts: uint64(t)}
}

// guardTestHold runs a burst that lasts until guardTestRelease(true).
func guardTestHold() { C.homa_guard_test_hold() }

func guardTestRelease(released bool) {
	r := 0
	if released {
		r = 1
	}
	C.homa_guard_test_release(C.int(r))
}

// guardTestMunmap maps a page and unmaps it through the munmap that
// DPDK's plugins resolve; -2 means that is not the guard's.
func guardTestMunmap() int { return int(C.homa_guard_test_munmap()) }

package shm

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// A worker's region is made resident when it is made, in both processes,
// so that no access to it ever takes a page fault afterwards. Left to be
// touched as used, the region's pages are faulted in one by one by
// whoever first touches them: the daemon's polling loop, writing a
// message into a fresh receive-pool page (the pool is allocated next fit,
// so the first pass over its pages touches a fresh one per message), and
// the worker, reading it. On the 2-vCPU virtual machines of this project
// a first touch cost from a few µs (a 4 KB page) to a millisecond (a 2 MB
// hugepage, zeroed), stalling the loop for every host it runs; `perf
// starts` measures a fresh daemon's first RPCs to show it. Made resident
// at attach, the cost is paid once, on the control socket's goroutine,
// never on the loop: about 258 MiB zeroed per region of the demo's size.
// A hugetlb region's pages are reserved when it is mapped anyway; one on
// 4 KB pages now takes its whole size at attach instead of as it fills
// (the memory the worker was promised, made real before it is relied on).

// makeResident faults every page of region in, writable. The daemon calls
// it on a fresh region, before anyone else maps it. pageSize is the
// region's page size (4 KB, or 2 MB on hugetlb).
func makeResident(region []byte, pageSize int) error {
	err := unix.Madvise(region, unix.MADV_POPULATE_WRITE)
	if err != unix.EINVAL {
		if err != nil {
			return fmt.Errorf("make the region resident (%d bytes): %w", len(region), err)
		}
		return nil
	}
	// Before Linux 5.14 there is no MADV_POPULATE_WRITE: write a byte of
	// every page instead. The region is new (all zeros) and not yet
	// shared, so writing zeros changes nothing.
	for off := 0; off < len(region); off += pageSize {
		region[off] = 0
	}
	return nil
}

// mapPopulate is the worker's mmap flag that maps every page of the
// region at once: the daemon made them resident, so nothing is read or
// zeroed, only the worker's page tables are filled.
const mapPopulate = unix.MAP_POPULATE

// The burst guard: no memory is unmapped while a burst that may read it
// is still running. See guard.go for why; shim.h holds the burst side
// (homa_guard_enter, homa_guard_leave).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <rte_pause.h>
#include "shim.h"

struct homa_guard_slot homa_guard_lcore[RTE_MAX_LCORE];
struct homa_guard_slot homa_guard_other;

// guardWait bounds the wait for one burst (ns): far beyond any burst's
// length, even with its thread preempted on a loaded machine, and short
// enough that a thread stuck for good does not hold EAL's interrupt thread
// (and every port's link handling with it) for long.
#define HOMA_GUARD_WAIT_NS 1000000000ull

static uint64_t guard_waits;	// homa_guard_sync calls that found a burst running
static uint64_t guard_timeouts; // bursts still running after HOMA_GUARD_WAIT_NS

static uint64_t guard_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// guard_wait waits until *p differs from seen (the burst that made it
// odd has left) or, with until_zero, until *p is 0, or until the bound
// passes since *start (set at the first wait of a sync). It returns 1.
static int guard_wait(uint64_t *p, uint64_t seen, int until_zero, uint64_t *start) {
	for (unsigned spin = 0;; spin++) {
		uint64_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
		if (until_zero ? v == 0 : v != seen)
			return 1;
		if (spin < 256) {
			rte_pause();
			continue;
		}
		if (*start == 0)
			*start = guard_now();
		else if (guard_now() - *start > HOMA_GUARD_WAIT_NS) {
			__atomic_fetch_add(&guard_timeouts, 1, __ATOMIC_RELAXED);
			// Unmapping now may crash the burst; say so where the
			// operator looks first.
			fprintf(stderr, "homa burst guard: a burst still running %llu ms after an unmapping began; unmapping anyway\n",
				(unsigned long long)(HOMA_GUARD_WAIT_NS / 1000000));
			return 1;
		}
		sched_yield();
	}
}

// homa_guard_sync returns once every burst that may have read memory
// before the call has finished. The full fence pairs with the one in
// homa_guard_enter: a burst that entered after it sees every store made
// before this call (memif's cleared CONNECTED flag, say), and one that
// entered before it is seen here and waited for.
void homa_guard_sync(void) {
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	unsigned self = rte_lcore_id();
	uint64_t start = 0;
	int waited = 0;
	for (unsigned i = 0; i < RTE_MAX_LCORE; i++) {
		if (i == self)
			continue; // a burst never unmaps; this thread is not in one
		uint64_t s = __atomic_load_n(&homa_guard_lcore[i].seq, __ATOMIC_ACQUIRE);
		if (s & 1)
			waited |= guard_wait(&homa_guard_lcore[i].seq, s, 0, &start);
	}
	if (__atomic_load_n(&homa_guard_other.seq, __ATOMIC_ACQUIRE) != 0)
		waited |= guard_wait(&homa_guard_other.seq, 0, 1, &start);
	if (waited)
		__atomic_fetch_add(&guard_waits, 1, __ATOMIC_RELAXED);
}

void homa_guard_stats(uint64_t *waits, uint64_t *timeouts) {
	*waits = __atomic_load_n(&guard_waits, __ATOMIC_RELAXED);
	*timeouts = __atomic_load_n(&guard_timeouts, __ATOMIC_RELAXED);
}

// munmap replaces the C library's for the whole process (the linker
// exports it, so DPDK's drivers, loaded as plugins, bind to it): it waits
// for running bursts, then unmaps. The Go runtime makes its own system
// calls and never comes here.
int munmap(void *addr, size_t len) {
	homa_guard_sync();
	return (int)syscall(SYS_munmap, addr, len);
}

// For the package's tests: a burst that runs until released, and an
// unmapping through the symbol that DPDK's plugins bind to.
static int guard_test_released;

void homa_guard_test_hold(void) {
	struct homa_guard_slot *g = homa_guard_enter();
	while (!__atomic_load_n(&guard_test_released, __ATOMIC_ACQUIRE))
		sched_yield();
	homa_guard_leave(g);
}

void homa_guard_test_release(int released) { __atomic_store_n(&guard_test_released, released, __ATOMIC_RELEASE); }

// homa_guard_test_munmap maps a page and unmaps it through the process's
// global munmap; -2 when that is not this file's.
int homa_guard_test_munmap(void) {
	int (*fn)(void *, size_t) = (int (*)(void *, size_t))dlsym(RTLD_DEFAULT, "munmap");
	if (fn != munmap)
		return -2;
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	return fn(p, 4096);
}

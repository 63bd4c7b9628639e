// Thin C shims over DPDK 22.11 for the Go binding.
//
// DPDK's fast path is mostly static inline functions and macros, which cgo
// cannot call directly; rte_errno is a thread-local. Each shim here is one
// C call that Go makes once per burst (never once per packet). Pointers to
// arrays of mbuf pointers cross as uintptr_t: the arrays live in Go memory
// that holds only C pointers, and passing the address as an integer spares
// cgo's per-call pointer check (see mbuf_unsafe.go).
#ifndef HOMA_DPDK_SHIM_H
#define HOMA_DPDK_SHIM_H

#include <stdint.h>
#include <stddef.h>
#include <rte_eal.h>
#include <rte_version.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_launch.h>
#include <rte_mempool.h>
#include <rte_mbuf.h>
#include <rte_ethdev.h>
#include <rte_ring.h>
#include <rte_bus_vdev.h>

// Offsets of the rte_mbuf fields the Go side reads and writes in place.
enum {
	HOMA_MBUF_OFF_BUF_ADDR = offsetof(struct rte_mbuf, buf_addr),
	HOMA_MBUF_OFF_DATA_OFF = offsetof(struct rte_mbuf, data_off),
	HOMA_MBUF_OFF_REFCNT = offsetof(struct rte_mbuf, refcnt),
	HOMA_MBUF_OFF_NB_SEGS = offsetof(struct rte_mbuf, nb_segs),
	HOMA_MBUF_OFF_PORT = offsetof(struct rte_mbuf, port),
	HOMA_MBUF_OFF_OL_FLAGS = offsetof(struct rte_mbuf, ol_flags),
	HOMA_MBUF_OFF_PKT_LEN = offsetof(struct rte_mbuf, pkt_len),
	HOMA_MBUF_OFF_DATA_LEN = offsetof(struct rte_mbuf, data_len),
	HOMA_MBUF_OFF_BUF_LEN = offsetof(struct rte_mbuf, buf_len),
	HOMA_MBUF_OFF_TX_OFFLOAD = offsetof(struct rte_mbuf, tx_offload),
	HOMA_MBUF_OFF_NEXT = offsetof(struct rte_mbuf, next),
	HOMA_MBUF_SIZE = sizeof(struct rte_mbuf),
	HOMA_MBUF_L2_LEN_BITS = RTE_MBUF_L2_LEN_BITS,
	HOMA_MBUF_L3_LEN_BITS = RTE_MBUF_L3_LEN_BITS,
	HOMA_MAX_LCORE = RTE_MAX_LCORE,
	HOMA_MAX_ETHPORTS = RTE_MAX_ETHPORTS,
	HOMA_LCORE_ID_ANY = (int)LCORE_ID_ANY,
	HOMA_PKTMBUF_HEADROOM = RTE_PKTMBUF_HEADROOM,
};


static inline int homa_errno(void) { return rte_errno; }

// The burst guard (guard.c, guard.go). Each lcore has a slot whose
// sequence number is odd while one of its bursts runs (only that lcore's
// thread writes it); threads without an lcore id share a count of their
// bursts running.
struct homa_guard_slot {
	uint64_t seq;
} __rte_cache_aligned;

extern struct homa_guard_slot homa_guard_lcore[RTE_MAX_LCORE];
extern struct homa_guard_slot homa_guard_other;

void homa_guard_sync(void);
void homa_guard_stats(uint64_t *waits, uint64_t *timeouts);

// homa_guard_enter marks a burst as running, with a full fence before the
// driver's first read (the pair of the fence in homa_guard_sync).
static inline struct homa_guard_slot *homa_guard_enter(void) {
	unsigned id = rte_lcore_id();
	struct homa_guard_slot *g = &homa_guard_other;
	if (likely(id < RTE_MAX_LCORE)) {
		g = &homa_guard_lcore[id];
		__atomic_store_n(&g->seq, g->seq + 1, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(&g->seq, 1, __ATOMIC_RELAXED);
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return g;
}

// homa_guard_leave marks the burst as done, after all its memory accesses.
static inline void homa_guard_leave(struct homa_guard_slot *g) {
	if (likely(g != &homa_guard_other))
		__atomic_store_n(&g->seq, g->seq + 1, __ATOMIC_RELEASE);
	else
		__atomic_fetch_sub(&g->seq, 1, __ATOMIC_RELEASE);
}

// Every burst below runs inside the burst guard.
static inline uint16_t homa_rx_burst(uint16_t port, uint16_t q, uintptr_t pkts, uint16_t n) {
	struct homa_guard_slot *g = homa_guard_enter();
	uint16_t got = rte_eth_rx_burst(port, q, (struct rte_mbuf **)pkts, n);
	homa_guard_leave(g);
	return got;
}

static inline uint16_t homa_tx_burst(uint16_t port, uint16_t q, uintptr_t pkts, uint16_t n) {
	struct homa_guard_slot *g = homa_guard_enter();
	uint16_t sent = rte_eth_tx_burst(port, q, (struct rte_mbuf **)pkts, n);
	homa_guard_leave(g);
	return sent;
}

// One burst of a batch: a queue of a port and an array of mbuf pointers.
// n is the burst's size (RX: room; TX: packets to send), done what the
// driver did (RX: received; TX: taken). flags: HOMA_BURST_HOLD keeps a
// reference to each packet the TX queue takes (see homa_tx_bursts).
struct homa_burst {
	uint16_t port;
	uint16_t queue;
	uint16_t n;
	uint16_t done;
	uint32_t flags;
	uintptr_t pkts;
};

enum { HOMA_BURST_HOLD = 1 };

// homa_rx_bursts receives on every entry of a batch, with one crossing
// from Go for all of them; with prefetch, it prefetches each packet's first
// data cache line (as l2fwd does for NICs that DMA into memory the CPU has
// not touched).
static inline uint32_t homa_rx_bursts_unguarded(uintptr_t batch, unsigned cnt, int prefetch) {
	struct homa_burst *b = (struct homa_burst *)batch;
	uint32_t total = 0;
	for (unsigned i = 0; i < cnt; i++) {
		struct rte_mbuf **m = (struct rte_mbuf **)b[i].pkts;
		uint16_t got = b[i].n ? rte_eth_rx_burst(b[i].port, b[i].queue, m, b[i].n) : 0;
		if (prefetch)
			for (uint16_t j = 0; j < got; j++)
				rte_prefetch0(rte_pktmbuf_mtod(m[j], void *));
		b[i].done = got;
		total += got;
	}
	return total;
}

// homa_tx_bursts sends every entry of a batch with one crossing from Go.
// With free_unsent, what a queue did not take is freed here and counted in
// the return value; otherwise it stays with the caller. An entry with
// HOMA_BURST_HOLD raises the reference count of every segment of its
// packets before the burst, and lowers it again for those the queue did
// not take: the caller keeps a reference to each packet taken, which
// stays above 1 until the driver (or a ring pair's peer) frees it.
static inline uint32_t homa_tx_bursts_unguarded(uintptr_t batch, unsigned cnt, int free_unsent) {
	struct homa_burst *b = (struct homa_burst *)batch;
	uint32_t freed = 0;
	for (unsigned i = 0; i < cnt; i++) {
		struct rte_mbuf **m = (struct rte_mbuf **)b[i].pkts;
		int hold = b[i].flags & HOMA_BURST_HOLD;
		if (hold)
			for (uint16_t j = 0; j < b[i].n; j++)
				rte_pktmbuf_refcnt_update(m[j], 1);
		uint16_t sent = b[i].n ? rte_eth_tx_burst(b[i].port, b[i].queue, m, b[i].n) : 0;
		b[i].done = sent;
		if (hold)
			for (uint16_t j = sent; j < b[i].n; j++)
				rte_pktmbuf_refcnt_update(m[j], -1);
		if (free_unsent && sent < b[i].n) {
			rte_pktmbuf_free_bulk(m + sent, b[i].n - sent);
			freed += b[i].n - sent;
		}
	}
	return freed;
}

static inline uint32_t homa_rx_bursts(uintptr_t batch, unsigned cnt, int prefetch) {
	struct homa_guard_slot *g = homa_guard_enter();
	uint32_t total = homa_rx_bursts_unguarded(batch, cnt, prefetch);
	homa_guard_leave(g);
	return total;
}

static inline uint32_t homa_tx_bursts(uintptr_t batch, unsigned cnt, int free_unsent) {
	struct homa_guard_slot *g = homa_guard_enter();
	uint32_t freed = homa_tx_bursts_unguarded(batch, cnt, free_unsent);
	homa_guard_leave(g);
	return freed;
}

// homa_tx_free_rx_bursts is a pipelined loop's crossing: it sends one
// batch (what a queue does not take stays with the caller, as in
// homa_tx_bursts), frees n other mbufs, and then receives on another
// batch, in one crossing from Go. The sends complete before the receives
// begin, so on a synchronous link (a pair of ports made of rings) frames
// just sent to a port of the rx batch are received here. ntx, n or nrx may
// be 0. The frees run inside the guard with the bursts: freeing touches
// only the mempools (and an external buffer's counting callback), so it
// does not lengthen the wait of an unmapping by more than a few hundred ns,
// and the crossing pays one fence instead of two. It returns the packets
// received.
static inline uint32_t homa_tx_free_rx_bursts(uintptr_t tx, unsigned ntx, uintptr_t pkts, unsigned n,
					      uintptr_t rx, unsigned nrx, int prefetch) {
	struct homa_guard_slot *g = homa_guard_enter();
	if (ntx)
		homa_tx_bursts_unguarded(tx, ntx, 0);
	if (n)
		rte_pktmbuf_free_bulk((struct rte_mbuf **)pkts, n);
	uint32_t received = nrx ? homa_rx_bursts_unguarded(rx, nrx, prefetch) : 0;
	homa_guard_leave(g);
	return received;
}

// homa_tx_rx_bursts sends one batch (freeing what a queue does not take)
// and then receives on another, in one crossing from Go: a polling loop's
// whole I/O for a pass. It returns the packets freed in the high 32 bits and
// the packets received in the low 32 bits.
static inline uint64_t homa_tx_rx_bursts(uintptr_t tx, unsigned ntx, uintptr_t rx, unsigned nrx,
					 int prefetch) {
	struct homa_guard_slot *g = homa_guard_enter();
	uint64_t freed = ntx ? homa_tx_bursts_unguarded(tx, ntx, 1) : 0;
	uint64_t received = nrx ? homa_rx_bursts_unguarded(rx, nrx, prefetch) : 0;
	homa_guard_leave(g);
	return freed << 32 | received;
}

// homa_tx_done_cleanup asks port's driver to free what TX queue q has
// sent (rte_eth_tx_done_cleanup), inside the guard as the bursts are:
// it touches the queue's ring. It returns the packets freed, or a
// negative errno (-ENOTSUP: the driver has no such operation).
static inline int homa_tx_done_cleanup(uint16_t port, uint16_t q) {
	struct homa_guard_slot *g = homa_guard_enter();
	int rc = rte_eth_tx_done_cleanup(port, q, 0);
	homa_guard_leave(g);
	return rc;
}

// homa_link_up is 1 when port's link is up, 0 when down, -1 for no port.
static inline int homa_link_up(uint16_t port) {
	struct rte_eth_link l;
	if (rte_eth_link_get_nowait(port, &l) < 0)
		return -1;
	return l.link_status == RTE_ETH_LINK_UP;
}

// Port operations for homa_port_op_intr (intr.c).
enum { HOMA_PORT_STOP = 1, HOMA_PORT_CLOSE = 2 };
int homa_port_op_intr(int op, uint16_t port, unsigned timeout_ms);
int homa_redial(uint16_t port, unsigned delay_us, int started);
int homa_redial_result(uint16_t port, int *rc, int *started);
void homa_redial_cancel(uint16_t port);

static inline int homa_alloc_bulk(struct rte_mempool *mp, uintptr_t pkts, unsigned n) {
	return rte_pktmbuf_alloc_bulk(mp, (struct rte_mbuf **)pkts, n);
}

static inline void homa_free_bulk(uintptr_t pkts, unsigned n) {
	rte_pktmbuf_free_bulk((struct rte_mbuf **)pkts, n);
}

static inline unsigned homa_ring_enqueue_burst(struct rte_ring *r, uintptr_t objs, unsigned n) {
	return rte_ring_enqueue_burst(r, (void *const *)objs, n, NULL);
}

static inline unsigned homa_ring_dequeue_burst(struct rte_ring *r, uintptr_t objs, unsigned n) {
	return rte_ring_dequeue_burst(r, (void **)objs, n, NULL);
}

static inline unsigned homa_ring_count(const struct rte_ring *r) { return rte_ring_count(r); }
static inline unsigned homa_ring_free_count(const struct rte_ring *r) { return rte_ring_free_count(r); }

static inline unsigned homa_mempool_avail(const struct rte_mempool *mp) { return rte_mempool_avail_count(mp); }
static inline unsigned homa_mempool_in_use(const struct rte_mempool *mp) { return rte_mempool_in_use_count(mp); }

// Multi-segment fallbacks of the length operations (the Go side handles
// single-segment mbufs without a C call).
static inline char *homa_pktmbuf_append(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_append(m, len); }
static inline int homa_pktmbuf_trim(struct rte_mbuf *m, uint16_t len) { return rte_pktmbuf_trim(m, len); }

// Declarations of the functions in shim.c.
int homa_eal_init(int argc, char **argv, char **log, size_t *loglen);
int homa_vdev_init(const char *name, const char *args, char **log, size_t *loglen);
int homa_remote_launch(unsigned lcore);
struct rte_mbuf_ext_shared_info *homa_extbuf_new(uint64_t **released);
void homa_extbuf_hold(struct rte_mbuf_ext_shared_info *shinfo);
void homa_extbuf_unhold(struct rte_mbuf_ext_shared_info *shinfo);

// homa_attach_chain attaches body to an external buffer (len bytes at
// addr, shared info shinfo), gives it len bytes of data, and chains it to
// head: one crossing for a zero-copy packet. 0, or -EOVERFLOW.
static inline int homa_attach_chain(struct rte_mbuf *head, struct rte_mbuf *body, void *addr, uint64_t iova,
				    uint16_t len, struct rte_mbuf_ext_shared_info *shinfo) {
	rte_mbuf_ext_refcnt_update(shinfo, 1);
	rte_pktmbuf_attach_extbuf(body, addr, iova, len, shinfo);
	body->data_len = len;
	body->pkt_len = len;
	return rte_pktmbuf_chain(head, body);
}

// homa_chain appends tail's segments to head's chain (rte_pktmbuf_chain):
// 0, or -EOVERFLOW when the chain would be too long.
static inline int homa_chain(struct rte_mbuf *head, struct rte_mbuf *tail) {
	return rte_pktmbuf_chain(head, tail);
}
void homa_extbuf_free(struct rte_mbuf_ext_shared_info *shinfo);
void homa_extbuf_attach(struct rte_mbuf *m, void *addr, uint64_t iova, uint16_t len,
			struct rte_mbuf_ext_shared_info *shinfo);
int homa_from_rings(const char *name, struct rte_ring **rx, unsigned nrx, struct rte_ring **tx,
		    unsigned ntx, unsigned socket);

#endif

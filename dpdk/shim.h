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

// homa_rx_burst receives a burst and prefetches each packet's first data
// cache line, as DPDK's l2fwd and l3fwd do, so that the Go code reading the
// headers next finds them in cache (the loads overlap instead of stalling
// one by one).
static inline uint16_t homa_rx_burst(uint16_t port, uint16_t q, uintptr_t pkts, uint16_t n) {
	struct rte_mbuf **m = (struct rte_mbuf **)pkts;
	uint16_t got = rte_eth_rx_burst(port, q, m, n);
	for (uint16_t i = 0; i < got; i++)
		rte_prefetch0(rte_pktmbuf_mtod(m[i], void *));
	return got;
}

static inline uint16_t homa_tx_burst(uint16_t port, uint16_t q, uintptr_t pkts, uint16_t n) {
	return rte_eth_tx_burst(port, q, (struct rte_mbuf **)pkts, n);
}

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
int homa_remote_launch(unsigned lcore);
struct rte_mbuf_ext_shared_info *homa_extbuf_new(uint64_t **released);
void homa_extbuf_free(struct rte_mbuf_ext_shared_info *shinfo);
void homa_extbuf_attach(struct rte_mbuf *m, void *addr, uint64_t iova, uint16_t len,
			struct rte_mbuf_ext_shared_info *shinfo);
int homa_from_rings(const char *name, struct rte_ring **rx, unsigned nrx, struct rte_ring **tx,
		    unsigned ntx, unsigned socket);

#endif

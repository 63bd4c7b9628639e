// Out-of-line C for the Go binding: EAL initialisation with its log
// captured, the lcore trampoline into Go, external-buffer support and the
// ring PMD constructor. See shim.h.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <rte_eth_ring.h>
#include <rte_malloc.h>
#include <rte_bus_vdev.h>
#include "shim.h"
#include "_cgo_export.h"

// homa_eal_init runs rte_eal_init with DPDK's log written to a memory stream,
// so that the Go side can return the lines that name the cause of a
// failure. *log is malloc'd (free it with free()); the log stream is reset to
// the default afterwards.
int homa_eal_init(int argc, char **argv, char **log, size_t *loglen) {
	*log = NULL;
	*loglen = 0;
	FILE *f = open_memstream(log, loglen);
	if (f != NULL)
		rte_openlog_stream(f);
	int rc = rte_eal_init(argc, argv);
	int err = rte_errno;
	fflush(stdout); // EAL's usage goes to stdout, which the Go side captures
	if (f != NULL) {
		rte_openlog_stream(NULL);
		fclose(f);
	}
	rte_errno = err;
	return rc;
}

// homa_vdev_init runs rte_vdev_init with DPDK's log written to a memory
// stream, as homa_eal_init does: the driver's own reason for a failure
// goes into the Go error, and its harmless lines can be left out. *log is
// malloc'd (free it with free()).
int homa_vdev_init(const char *name, const char *args, char **log, size_t *loglen) {
	*log = NULL;
	*loglen = 0;
	FILE *f = open_memstream(log, loglen);
	if (f != NULL)
		rte_openlog_stream(f);
	int rc = rte_vdev_init(name, args);
	if (f != NULL) {
		rte_openlog_stream(NULL);
		fclose(f);
	}
	return rc;
}

static int homa_lcore_trampoline(void *arg) {
	return homaLcoreMain((uintptr_t)arg);
}

// homa_remote_launch starts the exported Go function homaLcoreMain on an
// EAL worker lcore; it returns 0 or a negative errno.
int homa_remote_launch(unsigned lcore) {
	return rte_eal_remote_launch(homa_lcore_trampoline, (void *)(uintptr_t)lcore, lcore);
}

struct homa_extbuf {
	struct rte_mbuf_ext_shared_info shinfo;
	uint64_t released;
};

static void homa_extbuf_free_cb(void *addr, void *opaque) {
	(void)addr;
	__atomic_fetch_add((uint64_t *)opaque, 1, __ATOMIC_RELEASE);
}

// homa_extbuf_new returns shared info for one external buffer whose free
// callback counts, in **released, each time the last mbuf referring to the
// buffer is freed (by the application or by the driver after transmit).
struct rte_mbuf_ext_shared_info *homa_extbuf_new(uint64_t **released) {
	struct homa_extbuf *e = rte_zmalloc("homa_extbuf", sizeof(*e), RTE_CACHE_LINE_SIZE);
	if (e == NULL)
		return NULL;
	e->shinfo.free_cb = homa_extbuf_free_cb;
	e->shinfo.fcb_opaque = &e->released;
	*released = &e->released;
	rte_mbuf_ext_refcnt_set(&e->shinfo, 0);
	return &e->shinfo;
}

// homa_extbuf_hold takes a reference on the buffer for its owner, so that
// the free callback cannot run while the owner may still attach mbufs.
void homa_extbuf_hold(struct rte_mbuf_ext_shared_info *shinfo) {
	rte_mbuf_ext_refcnt_update(shinfo, 1);
}

// homa_extbuf_unhold drops the owner's reference; when no mbuf holds the
// buffer either, the release is counted now.
void homa_extbuf_unhold(struct rte_mbuf_ext_shared_info *shinfo) {
	if (rte_mbuf_ext_refcnt_update(shinfo, -1) == 0)
		shinfo->free_cb(NULL, shinfo->fcb_opaque);
}

void homa_extbuf_attach(struct rte_mbuf *m, void *addr, uint64_t iova, uint16_t len,
			struct rte_mbuf_ext_shared_info *shinfo) {
	rte_mbuf_ext_refcnt_update(shinfo, 1);
	rte_pktmbuf_attach_extbuf(m, addr, iova, len, shinfo);
	m->data_len = 0;
	m->pkt_len = 0;
}

int homa_from_rings(const char *name, struct rte_ring **rx, unsigned nrx, struct rte_ring **tx,
		    unsigned ntx, unsigned socket) {
	return rte_eth_from_rings(name, rx, nrx, tx, ntx, socket);
}

void homa_extbuf_free(struct rte_mbuf_ext_shared_info *shinfo) {
	rte_free(shinfo); // shinfo is the first member of struct homa_extbuf
}

// homa_thread_register gives the calling thread a DPDK lcore id; it
// returns 0 or a negative errno.
int homa_thread_register(void) {
	if (rte_thread_register() < 0)
		return -rte_errno;
	return 0;
}

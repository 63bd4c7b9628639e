/*
 * ring.h: the worker's ends of shm/ring.go's single-producer
 * single-consumer rings: the producer of the submission ring, the consumer
 * of the completion ring. Each end keeps its own index privately (the
 * daemon cannot move it), caches the other end's, and checks every load
 * of it (0 <= tail - head <= entries, wrapping); a bad value is counted in
 * corrupt and ignored. Slots are masked: no index reaches outside them.
 *
 * Ordering (C11 atomics on the shared words): the producer copies slots,
 * then stores its tail with release, once per burst; the consumer loads
 * the tail with acquire, copies the slots out, then stores its head with
 * release, once per burst. Going to sleep (hm_cons_prepare_sleep) stores
 * the wait flag, issues a seq_cst fence and reloads the tail, so that
 * either the consumer sees the daemon's tail or the daemon sees the flag.
 */
#ifndef HM_RING_H
#define HM_RING_H

#include <stdint.h>

#include "entry.h"

#define HM_RING_TAIL 0
#define HM_RING_HEAD 128
#define HM_RING_WAIT 136

typedef struct hm_ring {
	uint8_t *slots;  /* entries * 64 bytes in the shared region */
	uint64_t size;   /* entries, a power of two */
	uint64_t mask;   /* size - 1 */
	uint64_t *tail;  /* producer's index (shared) */
	uint64_t *head;  /* consumer's index (shared) */
	uint32_t *wait;  /* consumer's sleep flag (shared) */
	uint64_t mine;   /* own index: authoritative, private */
	uint64_t theirs; /* the other end's index, last seen and found valid */
	uint64_t corrupt; /* times the other end's index was out of range */
} hm_ring;

/* Attaches an end of the ring at mem (hm_ring_bytes(entries) bytes, 64-byte
 * aligned, initialised by its creator). 0, or -1 if the geometry or the
 * indices found are wrong. producer: 1 for the producing end. */
int hm_ring_attach(hm_ring *r, void *mem, uint64_t entries, int producer);

/* InitRing: a fresh control block with both indices at start (tests). */
void hm_ring_init(void *mem, uint64_t entries, uint64_t start);

/* Producer: pushes as many of the n entries of src (64 bytes each) as fit,
 * with one release store of the tail; returns how many. */
unsigned hm_prod_push(hm_ring *r, const uint8_t *src, unsigned n);
/* Producer, after a push: whether the consumer (the daemon's loop) went
 * to sleep with its wait flag raised, which this call lowers: then the
 * caller rings the doorbell. A seq_cst fence orders the tail's store
 * before the flag's load, as the loop orders its flag's store before its
 * last look at the tail (shm/doc.go, "Waiting"). */
int hm_prod_take_waiter(hm_ring *r);
/* Producer: slots free now (reloads the head). */
uint64_t hm_prod_free(hm_ring *r);

/* Consumer: copies up to n entries into dst and frees their slots with one
 * release store of the head; returns how many. */
unsigned hm_cons_pop(hm_ring *r, uint8_t *dst, unsigned n);
/* Consumer: entries waiting (reloads the tail). */
uint64_t hm_cons_len(hm_ring *r);
/* Consumer: sets the wait flag, fences, rechecks: 1 if the ring is still
 * empty (the caller may sleep, then hm_cons_wake_up), 0 if entries came
 * (the flag is cleared again). */
int hm_cons_prepare_sleep(hm_ring *r);
void hm_cons_wake_up(hm_ring *r);


#endif

/*
 * ring.c: see ring.h.
 */
#include "ring.h"

#include <stdatomic.h>
#include <string.h>

#include "layout.h"

#define A64(p) ((_Atomic uint64_t *)(p))
#define A32(p) ((_Atomic uint32_t *)(p))

int hm_ring_attach(hm_ring *r, void *mem, uint64_t entries, int producer)
{
	if (entries == 0 || (entries & (entries - 1)) || entries > HM_MAX_RING_ENTRIES ||
	    ((uintptr_t)mem & (HM_CACHE_LINE - 1)))
		return -1;
	uint8_t *m = mem;
	memset(r, 0, sizeof(*r));
	r->slots = m + HM_RING_HEADER_SIZE;
	r->size = entries;
	r->mask = entries - 1;
	r->tail = (uint64_t *)(m + HM_RING_TAIL);
	r->head = (uint64_t *)(m + HM_RING_HEAD);
	r->wait = (uint32_t *)(m + HM_RING_WAIT);
	uint64_t t = atomic_load_explicit(A64(r->tail), memory_order_acquire);
	uint64_t h = atomic_load_explicit(A64(r->head), memory_order_acquire);
	if (t - h > entries)
		return -1;
	r->mine = producer ? t : h;
	r->theirs = producer ? h : t;
	return 0;
}

void hm_ring_init(void *mem, uint64_t entries, uint64_t start)
{
	uint8_t *m = mem;
	(void)entries;
	memset(m, 0, HM_RING_HEADER_SIZE);
	atomic_store_explicit(A64(m + HM_RING_TAIL), start, memory_order_release);
	atomic_store_explicit(A64(m + HM_RING_HEAD), start, memory_order_release);
}

/* Producer: reload the consumer's head (acquire: its reads of the slots
 * it freed are done); a value claiming more than size outstanding, or
 * ahead of what was pushed, is counted and ignored. */
static void prod_refresh(hm_ring *r)
{
	uint64_t h = atomic_load_explicit(A64(r->head), memory_order_acquire);
	if (r->mine - h > r->size) {
		r->corrupt++;
		return;
	}
	r->theirs = h;
}

unsigned hm_prod_push(hm_ring *r, const uint8_t *src, unsigned n)
{
	uint64_t free = r->size - (r->mine - r->theirs);
	if (free < n) {
		prod_refresh(r);
		free = r->size - (r->mine - r->theirs);
	}
	if (free < n)
		n = (unsigned)free;
	for (unsigned i = 0; i < n; i++)
		memcpy(r->slots + ((r->mine + i) & r->mask) * HM_ENTRY_SIZE, src + (size_t)i * HM_ENTRY_SIZE,
		       HM_ENTRY_SIZE);
	if (n) {
		r->mine += n;
		atomic_store_explicit(A64(r->tail), r->mine, memory_order_release);
	}
	return n;
}

int hm_prod_take_waiter(hm_ring *r)
{
	atomic_thread_fence(memory_order_seq_cst);
	_Atomic uint32_t *w = (_Atomic uint32_t *)r->wait;
	if (atomic_load_explicit(w, memory_order_relaxed) == 0) /* the common case: no locked op */
		return 0;
	return atomic_exchange_explicit(w, 0, memory_order_seq_cst) != 0;
}

uint64_t hm_prod_free(hm_ring *r)
{
	prod_refresh(r);
	return r->size - (r->mine - r->theirs);
}

/* Consumer: reload the producer's tail (acquire: the slots it published
 * are written). A value behind the head or more than size ahead is
 * counted and ignored. */
static void cons_refresh(hm_ring *r)
{
	uint64_t t = atomic_load_explicit(A64(r->tail), memory_order_acquire);
	if (t - r->mine > r->size) {
		r->corrupt++;
		return;
	}
	r->theirs = t;
}

unsigned hm_cons_pop(hm_ring *r, uint8_t *dst, unsigned n)
{
	uint64_t avail = r->theirs - r->mine;
	if (avail < n) {
		cons_refresh(r);
		avail = r->theirs - r->mine;
	}
	if (avail < n)
		n = (unsigned)avail;
	for (unsigned i = 0; i < n; i++)
		memcpy(dst + (size_t)i * HM_ENTRY_SIZE, r->slots + ((r->mine + i) & r->mask) * HM_ENTRY_SIZE,
		       HM_ENTRY_SIZE);
	if (n) {
		r->mine += n;
		atomic_store_explicit(A64(r->head), r->mine, memory_order_release);
	}
	return n;
}

uint64_t hm_cons_len(hm_ring *r)
{
	cons_refresh(r);
	return r->theirs - r->mine;
}

int hm_cons_prepare_sleep(hm_ring *r)
{
	atomic_store_explicit(A32(r->wait), 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst); /* the flag before the tail: doc.go, "Memory ordering" */
	if (hm_cons_len(r)) {
		atomic_store_explicit(A32(r->wait), 0, memory_order_relaxed);
		return 0;
	}
	return 1;
}

void hm_cons_wake_up(hm_ring *r) { atomic_store_explicit(A32(r->wait), 0, memory_order_relaxed); }

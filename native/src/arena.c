/*
 * arena.c: see arena.h.
 */
#include "arena.h"

#include <stdlib.h>

int hm_arena_init(hm_arena *a, uint64_t size)
{
	a->size = size;
	a->used = 0;
	a->ranges = 0;
	a->cap = 16;
	a->free = malloc(a->cap * sizeof(*a->free));
	if (!a->free)
		return -1;
	a->free[0] = (hm_block){0, size};
	a->nfree = size ? 1 : 0;
	return 0;
}

void hm_arena_fini(hm_arena *a)
{
	free(a->free);
	a->free = NULL;
	a->nfree = a->cap = 0;
}

static void del(hm_arena *a, uint32_t i)
{
	for (uint32_t j = i; j + 1 < a->nfree; j++)
		a->free[j] = a->free[j + 1];
	a->nfree--;
}

int hm_arena_alloc(hm_arena *a, uint64_t n, uint64_t *off, uint64_t *take)
{
	if (n == 0)
		return -1;
	uint64_t want = (n + HM_ARENA_ALIGN - 1) & ~(uint64_t)(HM_ARENA_ALIGN - 1);
	for (uint32_t i = 0; i < a->nfree; i++) {
		hm_block *b = &a->free[i];
		if (b->size < n)
			continue;
		uint64_t t = want < b->size ? want : b->size;
		*off = b->start;
		*take = t;
		if (t == b->size) {
			del(a, i);
		} else {
			b->start += t;
			b->size -= t;
		}
		a->used += t;
		a->ranges++;
		return 0;
	}
	return -1;
}

int hm_arena_free(hm_arena *a, uint64_t off, uint64_t take)
{
	/* i: the first free block starting after off */
	uint32_t lo = 0, hi = a->nfree;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (a->free[mid].start <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t i = lo;
	if (take == 0 || off > a->size || take > a->size - off)
		return -1;
	if (i > 0 && a->free[i - 1].start + a->free[i - 1].size > off)
		return -1;
	if (i < a->nfree && off + take > a->free[i].start)
		return -1;
	int prev = i > 0 && a->free[i - 1].start + a->free[i - 1].size == off;
	int next = i < a->nfree && off + take == a->free[i].start;
	if (prev && next) {
		a->free[i - 1].size += take + a->free[i].size;
		del(a, i);
	} else if (prev) {
		a->free[i - 1].size += take;
	} else if (next) {
		a->free[i].start = off;
		a->free[i].size += take;
	} else {
		if (a->nfree == a->cap) {
			hm_block *nb = realloc(a->free, 2 * a->cap * sizeof(*nb));
			if (!nb)
				return -1;
			a->free = nb;
			a->cap *= 2;
		}
		for (uint32_t j = a->nfree; j > i; j--)
			a->free[j] = a->free[j - 1];
		a->free[i] = (hm_block){off, take};
		a->nfree++;
	}
	a->used -= take;
	a->ranges--;
	return 0;
}

uint64_t hm_arena_largest_free(const hm_arena *a)
{
	uint64_t m = 0;
	for (uint32_t i = 0; i < a->nfree; i++)
		if (a->free[i].size > m)
			m = a->free[i].size;
	return m;
}

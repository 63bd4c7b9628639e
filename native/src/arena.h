/*
 * arena.h: the worker's allocator for its transmit arena (python's
 * arena.py): first fit over a free list sorted by offset, coalescing a
 * freed range with its free neighbours; ranges rounded up to 64 bytes so
 * payloads start on a cache line (the last may be shorter when the arena's
 * size is not a multiple of 64). Private bookkeeping of offsets only; the
 * free list grows geometrically and is never shrunk, so a busy arena
 * allocates no memory in steady state.
 */
#ifndef HM_ARENA_H
#define HM_ARENA_H

#include <stdint.h>

#define HM_ARENA_ALIGN 64u

typedef struct hm_block {
	uint64_t start, size;
} hm_block;

typedef struct hm_arena {
	uint64_t size;     /* bytes of the arena */
	uint64_t used;     /* bytes allocated (rounded) */
	uint64_t ranges;   /* ranges allocated */
	hm_block *free;    /* free blocks, sorted by start, never adjacent */
	uint32_t nfree, cap;
} hm_arena;

/* 0, or -1 when out of memory. */
int hm_arena_init(hm_arena *a, uint64_t size);
void hm_arena_fini(hm_arena *a);

/* Allocates at least n (> 0) bytes: 0 and the offset in *off and the bytes
 * taken in *take (give both to hm_arena_free), or -1 if no free block is
 * large enough (first fit: the lowest such block). */
int hm_arena_alloc(hm_arena *a, uint64_t n, uint64_t *off, uint64_t *take);

/* Gives back the range [off, off+take) that hm_arena_alloc returned.
 * 0, or -1 if it overlaps a free block (a double free: nothing changes)
 * or memory for the free list ran out (the range is then lost, counted
 * as used). */
int hm_arena_free(hm_arena *a, uint64_t off, uint64_t take);

uint64_t hm_arena_largest_free(const hm_arena *a);

#endif

/*
 * table.h: the client's bookkeeping containers, none of which allocates on
 * the hot path once warm: an open-addressing hash map from u64 keys
 * (cookies, RPC ids; 0 is never a key) to u32 record indices, with linear
 * probing and backward-shift deletion (no tombstones), doubled at half
 * load; and a slab of fixed-size records reused through a free list,
 * doubled when full. Indices stay valid across growth; pointers do not.
 */
#ifndef HM_TABLE_H
#define HM_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct hm_map {
	uint64_t *keys; /* 0: empty */
	uint32_t *vals;
	uint32_t cap;   /* a power of two */
	uint32_t len;
} hm_map;

int hm_map_init(hm_map *m, uint32_t cap);
void hm_map_fini(hm_map *m);
/* The value of key, or -1. */
int64_t hm_map_get(const hm_map *m, uint64_t key);
/* Sets key's value (replacing one there): 0, or -1 out of memory. */
int hm_map_put(hm_map *m, uint64_t key, uint32_t val);
/* Removes key: 1 if it was there. */
int hm_map_del(hm_map *m, uint64_t key);

typedef struct hm_slab {
	void *recs;      /* cap records of size bytes */
	size_t size;     /* bytes per record; its first 4 bytes are the free-list link */
	uint32_t cap;
	uint32_t used;   /* records in use */
	uint32_t free;   /* first free record, or UINT32_MAX */
} hm_slab;

int hm_slab_init(hm_slab *s, size_t size, uint32_t cap);
void hm_slab_fini(hm_slab *s);
/* A free record's index (its bytes zeroed but for nothing), or -1 out of
 * memory. */
int64_t hm_slab_get(hm_slab *s);
void hm_slab_put(hm_slab *s, uint32_t i);

static inline void *hm_slab_at(const hm_slab *s, uint32_t i) { return (char *)s->recs + (size_t)i * s->size; }

#endif

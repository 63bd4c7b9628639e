/*
 * layout.h: the region header of shm/layout.go.
 */
#ifndef HM_LAYOUT_H
#define HM_LAYOUT_H

#include <stdint.h>

#define HM_MAGIC 0x314d4853414d4f48ull /* "HOMASHM1" as a little-endian u64 */
#define HM_VERSION 1u
#define HM_HEADER_SIZE 4096u
#define HM_CACHE_LINE 64u
#define HM_PAGE_SIZE 65536u
#define HM_RING_HEADER_SIZE 256u
#define HM_MAX_RING_ENTRIES (1ull << 20)
#define HM_MAX_ARENA_SIZE (1ull << 40)
#define HM_MAX_POOL_PAGES (1ull << 24)
#define HM_DEFAULT_MAX_MESSAGE 1000000u
#define HM_MAX_MESSAGE_LIMIT 0x7fffffffu

/* Feature bits of the header (shm.Feature*). */
#define HM_FEATURE_QUIET_ACCEPT 1u
#define HM_FEATURE_RETURN_ON_SUBMIT 2u
#define HM_FEATURE_DOORBELL 4u

/* The header's Features word (offset 100), read from a checked header. */
uint32_t hm_layout_features(const void *hdr);

static inline uint64_t hm_ring_bytes(uint64_t entries) { return HM_RING_HEADER_SIZE + entries * 64; }

#endif

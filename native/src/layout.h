/*
 * layout.h: the region header of shm/layout.go.
 */
#ifndef HM_LAYOUT_H
#define HM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "homa.h"

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
#define HM_FEATURE_HOST_INFO 8u
#define HM_FEATURE_PRIORITY 16u

/* The header's Features word (offset 100), read from a checked header. */
uint32_t hm_layout_features(const void *hdr);

/* What a header says of its host (shm.HostInfo): the fields at 104..131,
 * read only when Features has FeatureHostInfo. */
typedef struct hm_host {
	uint8_t said;      /* FeatureHostInfo was set: the rest is the header's */
	uint8_t ipv4[4];   /* network order; zero: none */
	uint8_t ipv6[16];  /* zero: none */
	uint32_t link_mbps; /* 0: unknown */
	uint32_t mtu;       /* 0: unknown */
} hm_host;

/* homa_layout_parse that also gives the host (host may be NULL), read
 * from the same copy of the header as the layout. */
int hm_layout_parse(const void *hdr, size_t mapped, homa_layout *l, homa_layout_error *e, hm_host *host);

static inline uint64_t hm_ring_bytes(uint64_t entries) { return HM_RING_HEADER_SIZE + entries * 64; }

#endif

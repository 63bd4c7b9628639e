/*
 * layout.c: homa_layout_parse, shm.ParseHeader in C: the same checks in
 * the same order, refusing with the same field name, value and reason;
 * hm_layout_parse gives the header's host too (FeatureHostInfo), which
 * homa_host_info_get hands out.
 */
#include "layout.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "homa.h"
#include "internal.h"

enum {
	HDR_MAGIC = 0,
	HDR_VERSION = 8,
	HDR_HEADER_SIZE = 12,
	HDR_REGION_SIZE = 16,
	HDR_SQ_OFFSET = 24,
	HDR_SQ_ENTRIES = 32,
	HDR_CQ_OFFSET = 40,
	HDR_CQ_ENTRIES = 48,
	HDR_ARENA_OFFSET = 56,
	HDR_ARENA_SIZE = 64,
	HDR_POOL_OFFSET = 72,
	HDR_POOL_PAGES = 80,
	HDR_ENTRY_SIZE = 88,
	HDR_PAGE_SIZE = 92,
	HDR_MAX_MESSAGE = 96,
	HDR_FEATURES = 100,
	HDR_HOST_IPV4 = 104,
	HDR_LINK_MBPS = 108,
	HDR_HOST_IPV6 = 112,
	HDR_MTU = 128,
	HDR_USED = 132, /* bytes of the header that carry fields */
};

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

uint32_t hm_layout_features(const void *hdr) { return rd32((const uint8_t *)hdr + HDR_FEATURES); }

/* fail fills e (when given) and returns HOMA_ELAYOUT. */
__attribute__((format(printf, 4, 5)))
static int fail(homa_layout_error *e, const char *field, uint64_t v, const char *fmt, ...)
{
	if (e) {
		memset(e, 0, sizeof(*e));
		snprintf(e->field, sizeof(e->field), "%s", field);
		e->value = v;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(e->reason, sizeof(e->reason), fmt, ap);
		va_end(ap);
	}
	return HOMA_ELAYOUT;
}

static int check_ring_entries(homa_layout_error *e, const char *field, uint64_t n)
{
	if (n == 0 || (n & (n - 1)) || n > HM_MAX_RING_ENTRIES)
		return fail(e, field, n, "not a power of two in 1..%llu", (unsigned long long)HM_MAX_RING_ENTRIES);
	return 0;
}

struct span {
	const char *field;
	uint64_t off, size;
};

/* Layout.Validate. */
static int validate(const homa_layout *l, uint64_t region_len, homa_layout_error *e)
{
	if (l->region_size < HM_HEADER_SIZE || l->region_size > region_len)
		return fail(e, "RegionSize", l->region_size, "not in %u..%llu (the mapped length)", HM_HEADER_SIZE,
			    (unsigned long long)region_len);
	int rc;
	if ((rc = check_ring_entries(e, "SQEntries", l->sq_entries)) ||
	    (rc = check_ring_entries(e, "CQEntries", l->cq_entries)))
		return rc;
	if (l->arena_size == 0 || l->arena_size > HM_MAX_ARENA_SIZE)
		return fail(e, "ArenaSize", l->arena_size, "not in 1..%llu", (unsigned long long)HM_MAX_ARENA_SIZE);
	if (l->pool_pages == 0 || l->pool_pages > HM_MAX_POOL_PAGES)
		return fail(e, "PoolPages", l->pool_pages, "not in 1..%llu", (unsigned long long)HM_MAX_POOL_PAGES);
	if (l->max_message == 0 || l->max_message > HM_MAX_MESSAGE_LIMIT)
		return fail(e, "MaxMessage", l->max_message, "not in 1..%u", HM_MAX_MESSAGE_LIMIT);
	struct span sp[5] = {
		{"HeaderSize", 0, HM_HEADER_SIZE},
		{"SQOffset", l->sq_offset, hm_ring_bytes(l->sq_entries)},
		{"CQOffset", l->cq_offset, hm_ring_bytes(l->cq_entries)},
		{"ArenaOffset", l->arena_offset, l->arena_size},
		{"PoolOffset", l->pool_offset, l->pool_pages * HM_PAGE_SIZE},
	};
	for (int i = 1; i < 5; i++) {
		const struct span *s = &sp[i];
		if (s->off % HM_CACHE_LINE)
			return fail(e, s->field, s->off, "not a multiple of 64 (cache line)");
		if (s->off > l->region_size || s->size > l->region_size - s->off)
			return fail(e, s->field, s->off, "part of %llu bytes ends beyond RegionSize %llu",
				    (unsigned long long)s->size, (unsigned long long)l->region_size);
	}
	for (int i = 0; i < 5; i++)
		for (int j = i + 1; j < 5; j++) {
			const struct span *a = &sp[i], *b = &sp[j];
			if (a->off < b->off + b->size && b->off < a->off + a->size)
				return fail(e, b->field, b->off, "overlaps the part at %s %llu", a->field,
					    (unsigned long long)a->off);
		}
	return 0;
}

/* read_host reads the host fields of header copy h under FeatureHostInfo
 * (an older daemon's header has the bit clear and zero there) and checks
 * that one address is set, as Layout.Validate does. */
static int read_host(const uint8_t *h, hm_host *host, homa_layout_error *e)
{
	static const uint8_t zero[16];
	memset(host, 0, sizeof(*host));
	if (!(rd32(h + HDR_FEATURES) & HM_FEATURE_HOST_INFO))
		return 0;
	host->said = 1;
	memcpy(host->ipv4, h + HDR_HOST_IPV4, 4);
	host->link_mbps = rd32(h + HDR_LINK_MBPS);
	memcpy(host->ipv6, h + HDR_HOST_IPV6, 16);
	host->mtu = rd32(h + HDR_MTU);
	if (memcmp(host->ipv4, zero, 4) == 0 && memcmp(host->ipv6, zero, 16) == 0)
		return fail(e, "HostIPv4", 0, "zero, and HostIPv6 too, in a header with FeatureHostInfo");
	return 0;
}

HM_EXPORT int homa_layout_parse(const void *hdr, size_t mapped, homa_layout *out, homa_layout_error *e)
{
	return hm_layout_parse(hdr, mapped, out, e, NULL);
}

int hm_layout_parse(const void *hdr, size_t mapped, homa_layout *out, homa_layout_error *e, hm_host *host_out)
{
	if (!hdr || mapped < HM_HEADER_SIZE)
		return fail(e, "RegionSize", hdr ? mapped : 0, "mapped length below the 4096-byte header");
	uint8_t h[HDR_USED]; /* the fields, copied once: later writes cannot change what is checked */
	memcpy(h, hdr, sizeof(h));
	uint64_t magic = rd64(h + HDR_MAGIC);
	if (magic != HM_MAGIC)
		return fail(e, "Magic", magic, "not \"HOMASHM1\"");
	uint32_t v = rd32(h + HDR_VERSION);
	if (v != HM_VERSION)
		return fail(e, "Version", v, "this build reads version %u", HM_VERSION);
	if ((v = rd32(h + HDR_HEADER_SIZE)) != HM_HEADER_SIZE)
		return fail(e, "HeaderSize", v, "want %u", HM_HEADER_SIZE);
	if ((v = rd32(h + HDR_ENTRY_SIZE)) != 64)
		return fail(e, "EntrySize", v, "want %u", 64u);
	if ((v = rd32(h + HDR_PAGE_SIZE)) != HM_PAGE_SIZE)
		return fail(e, "PageSize", v, "want %u", HM_PAGE_SIZE);
	homa_layout l = {
		.version = HM_VERSION,
		.max_message = rd32(h + HDR_MAX_MESSAGE),
		.region_size = rd64(h + HDR_REGION_SIZE),
		.sq_offset = rd64(h + HDR_SQ_OFFSET),
		.sq_entries = rd64(h + HDR_SQ_ENTRIES),
		.cq_offset = rd64(h + HDR_CQ_OFFSET),
		.cq_entries = rd64(h + HDR_CQ_ENTRIES),
		.arena_offset = rd64(h + HDR_ARENA_OFFSET),
		.arena_size = rd64(h + HDR_ARENA_SIZE),
		.pool_offset = rd64(h + HDR_POOL_OFFSET),
		.pool_pages = rd64(h + HDR_POOL_PAGES),
	};
	if (l.max_message == 0)
		l.max_message = HM_DEFAULT_MAX_MESSAGE; /* a daemon from before the field */
	int rc = validate(&l, mapped, e);
	if (rc)
		return rc;
	hm_host host;
	if ((rc = read_host(h, &host, e)))
		return rc;
	if (out)
		*out = l;
	if (host_out)
		*host_out = host;
	return 0;
}

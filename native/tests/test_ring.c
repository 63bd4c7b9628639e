/*
 * test_ring: the rings (python's test_ring.py): push and pop, full,
 * across 2^64, corrupt indices counted and ignored, the wait flag; then
 * exchanges through a fake engine whose rings start 300 entries before
 * 2^64, with 16 slots each.
 */
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "ring.h"
#include "util.h"

static uint8_t *ring_mem(uint64_t entries, uint64_t start)
{
	uint8_t *m = aligned_alloc(64, hm_ring_bytes(entries));
	CHECK(m != NULL);
	memset(m, 0xee, hm_ring_bytes(entries));
	hm_ring_init(m, entries, start);
	return m;
}

static void entry(uint8_t *b, uint64_t v)
{
	memset(b, 0, HM_ENTRY_SIZE);
	memcpy(b + 8, &v, 8);
}

static uint64_t value(const uint8_t *b)
{
	uint64_t v;
	memcpy(&v, b + 8, 8);
	return v;
}

static void round_trip(uint64_t start)
{
	uint8_t *m = ring_mem(8, start);
	hm_ring p, c;
	CHECK_EQ(hm_ring_attach(&p, m, 8, 1), 0);
	CHECK_EQ(hm_ring_attach(&c, m, 8, 0), 0);
	uint8_t b[8 * HM_ENTRY_SIZE], out[8 * HM_ENTRY_SIZE];
	uint64_t next = 0, want = 0;
	for (int round = 0; round < 100; round++) {
		unsigned k = (unsigned)(round % 8) + 1;
		for (unsigned i = 0; i < k; i++)
			entry(b + i * HM_ENTRY_SIZE, next + i);
		unsigned n = hm_prod_push(&p, b, k);
		next += n;
		CHECK_EQ(hm_cons_len(&c), n);
		unsigned got = hm_cons_pop(&c, out, 8);
		CHECK_EQ(got, n);
		for (unsigned i = 0; i < got; i++)
			CHECK_EQ(value(out + i * HM_ENTRY_SIZE), want++);
	}
	/* full */
	for (int i = 0; i < 8; i++)
		entry(b + i * HM_ENTRY_SIZE, (uint64_t)i);
	CHECK_EQ(hm_prod_push(&p, b, 8), 8);
	CHECK_EQ(hm_prod_push(&p, b, 1), 0);
	CHECK_EQ(hm_prod_free(&p), 0);
	CHECK_EQ(hm_cons_pop(&c, out, 3), 3);
	CHECK_EQ(hm_prod_push(&p, b, 8), 3);
	CHECK_EQ(hm_cons_pop(&c, out, 8), 8);
	CHECK_EQ(p.corrupt + c.corrupt, 0);
	/* both indices near start + pushes: the tail wrapped when start is near 2^64 */
	uint64_t tail;
	memcpy(&tail, m + HM_RING_TAIL, 8);
	CHECK_EQ(tail, start + next + 11);
	free(m);
}

static void corrupt(void)
{
	uint8_t *m = ring_mem(8, 0);
	hm_ring p, c;
	CHECK_EQ(hm_ring_attach(&p, m, 8, 1), 0);
	CHECK_EQ(hm_ring_attach(&c, m, 8, 0), 0);
	uint8_t b[HM_ENTRY_SIZE], out[HM_ENTRY_SIZE];
	entry(b, 42);
	CHECK_EQ(hm_prod_push(&p, b, 1), 1);
	CHECK_EQ(hm_cons_len(&c), 1);
	uint64_t bad = 1000;
	memcpy(m + HM_RING_TAIL, &bad, 8); /* the producer claims 1000 */
	CHECK_EQ(hm_cons_len(&c), 1); /* the last good tail */
	CHECK_EQ(c.corrupt, 1);
	bad = UINT64_MAX; /* behind the head */
	memcpy(m + HM_RING_TAIL, &bad, 8);
	CHECK_EQ(hm_cons_pop(&c, out, 1), 1);
	CHECK_EQ(value(out), 42);
	CHECK_EQ(hm_cons_pop(&c, out, 1), 0);
	CHECK(c.corrupt >= 2);
	/* a head ahead of the tail */
	bad = 500;
	memcpy(m + HM_RING_HEAD, &bad, 8);
	for (int i = 0; i < 7; i++)
		CHECK_EQ(hm_prod_push(&p, b, 1), 1);
	CHECK_EQ(hm_prod_push(&p, b, 1), 0); /* full as far as its last good head (0) shows */
	CHECK(p.corrupt >= 1);
	/* indices corrupt at attach are refused */
	bad = 100;
	memcpy(m + HM_RING_TAIL, &bad, 8);
	bad = 0;
	memcpy(m + HM_RING_HEAD, &bad, 8);
	CHECK_EQ(hm_ring_attach(&c, m, 8, 0), -1);
	/* geometry */
	CHECK_EQ(hm_ring_attach(&c, m, 6, 0), -1);
	CHECK_EQ(hm_ring_attach(&c, m + 8, 8, 0), -1);
	free(m);
}

static void wait_flag(void)
{
	uint8_t *m = ring_mem(4, 0);
	hm_ring p, c;
	CHECK_EQ(hm_ring_attach(&p, m, 4, 1), 0);
	CHECK_EQ(hm_ring_attach(&c, m, 4, 0), 0);
	uint32_t flag;
	CHECK_EQ(hm_cons_prepare_sleep(&c), 1);
	memcpy(&flag, m + HM_RING_WAIT, 4);
	CHECK_EQ(flag, 1);
	hm_cons_wake_up(&c);
	memcpy(&flag, m + HM_RING_WAIT, 4);
	CHECK_EQ(flag, 0);
	uint8_t b[HM_ENTRY_SIZE];
	entry(b, 1);
	hm_prod_push(&p, b, 1);
	CHECK_EQ(hm_cons_prepare_sleep(&c), 0); /* entries came: no sleep, flag cleared */
	memcpy(&flag, m + HM_RING_WAIT, 4);
	CHECK_EQ(flag, 0);
	free(m);
}

static void across_2_64(void)
{
	fake f;
	char start[32];
	snprintf(start, sizeof(start), "%llu", (unsigned long long)(UINT64_MAX - 299));
	const char *flags[] = {"-ring-start", start, "-sq", "16", "-cq", "16", NULL};
	fake_start(&f, flags);
	echo *e = echo_start(&f, 99, HOMA_REPLY_DETACHED);
	homa_client *c = attach_or_die(&f, NULL);
	homa_addr a;
	homa_addr_parse("127.0.0.1", 99, &a);
	for (uint64_t i = 0; i < 250; i++) {
		struct iovec iov = {&i, sizeof(i)};
		uint64_t id;
		CHECK_EQ(homa_send(c, &a, &iov, 1, 0, i % 3 == 0 ? HOMA_SEND_DETACHED : 0, &id), 0);
		homa_msg m;
		if (i % 3 == 0)
			CHECK_EQ(homa_receive(c, &m, 5000000000ll), 0);
		else
			CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
		CHECK_EQ(m.length, 8);
		CHECK(memcmp(m.data, &i, 8) == 0);
		homa_msg_release(c, &m);
	}
	homa_stats s = stats_of(c);
	CHECK_EQ(s.sq_corrupt + s.cq_corrupt + s.bad_completions + s.unexpected_completions, 0);
	size_t len;
	uint8_t *r = homa_region(c, &len);
	homa_layout l;
	homa_get_layout(c, &l);
	uint64_t tail;
	memcpy(&tail, r + l.cq_offset, 8);
	CHECK(tail < (1u << 20)); /* the CQ tail wrapped */
	homa_destroy(c);
	echo_stop(e);
	fake_stop(&f);
}

int main(void)
{
	round_trip(0);
	round_trip(UINT64_MAX - 20);
	corrupt();
	wait_flag();
	across_2_64();
	return 0;
}

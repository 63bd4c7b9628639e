/*
 * test_arena: the transmit arena's allocator (python's test_arena.py),
 * then the arena under pressure through the fake engine: 2 MB sent
 * through 256 KB, a message that never fits, the arena full while the
 * engine is paused (HOMA_EARENA within op_timeout), and its late release.
 */
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "util.h"

static void check_blocks(const hm_arena *a, const uint64_t *want, unsigned n)
{
	CHECK_EQ(a->nfree, n);
	for (unsigned i = 0; i < n; i++) {
		CHECK_EQ(a->free[i].start, want[2 * i]);
		CHECK_EQ(a->free[i].size, want[2 * i + 1]);
	}
}

static uint64_t alloc(hm_arena *a, uint64_t n, uint64_t *take)
{
	uint64_t off, t;
	if (hm_arena_alloc(a, n, &off, &t))
		return UINT64_MAX;
	if (take)
		*take = t;
	return off;
}

static void unit(void)
{
	hm_arena a;
	CHECK_EQ(hm_arena_init(&a, 1024), 0);
	CHECK_EQ(alloc(&a, 1, NULL), 0);
	CHECK_EQ(alloc(&a, 64, NULL), 64);
	CHECK_EQ(alloc(&a, 65, NULL), 128);
	CHECK_EQ(alloc(&a, 100, NULL), 256);
	CHECK_EQ(a.used, 64 + 64 + 128 + 128);
	check_blocks(&a, (uint64_t[]){384, 640}, 1);
	CHECK_EQ(alloc(&a, 0, NULL), UINT64_MAX);
	hm_arena_fini(&a);

	CHECK_EQ(hm_arena_init(&a, 256), 0); /* full */
	CHECK_EQ(alloc(&a, 256, NULL), 0);
	CHECK_EQ(alloc(&a, 1, NULL), UINT64_MAX);
	CHECK_EQ(hm_arena_free(&a, 0, 256), 0);
	CHECK_EQ(hm_arena_free(&a, 0, 256), -1); /* a double free changes nothing */
	CHECK_EQ(alloc(&a, 1, NULL), 0);
	CHECK_EQ(alloc(&a, 256, NULL), UINT64_MAX);
	hm_arena_fini(&a);

	uint64_t t;
	CHECK_EQ(hm_arena_init(&a, 100), 0); /* odd-sized tail */
	CHECK_EQ(alloc(&a, 100, &t), 0);
	CHECK_EQ(t, 100);
	hm_arena_free(&a, 0, t);
	check_blocks(&a, (uint64_t[]){0, 100}, 1);
	CHECK_EQ(alloc(&a, 70, &t), 0);
	CHECK_EQ(t, 100);
	CHECK_EQ(a.nfree, 0);
	hm_arena_fini(&a);
	CHECK_EQ(hm_arena_init(&a, 200), 0);
	CHECK_EQ(alloc(&a, 100, NULL), 0);
	CHECK_EQ(alloc(&a, 72, &t), 128);
	CHECK_EQ(t, 72);
	CHECK_EQ(a.used, 200);
	hm_arena_free(&a, 0, 128);
	hm_arena_free(&a, 128, 72);
	check_blocks(&a, (uint64_t[]){0, 200}, 1);
	hm_arena_fini(&a);

	CHECK_EQ(hm_arena_init(&a, 640), 0); /* coalescing */
	for (int i = 0; i < 10; i++)
		CHECK_EQ(alloc(&a, 64, NULL), 64 * (uint64_t)i);
	hm_arena_free(&a, 64, 64);
	hm_arena_free(&a, 192, 64);
	hm_arena_free(&a, 320, 64);
	check_blocks(&a, (uint64_t[]){64, 64, 192, 64, 320, 64}, 3);
	hm_arena_free(&a, 128, 64);
	check_blocks(&a, (uint64_t[]){64, 192, 320, 64}, 2);
	hm_arena_free(&a, 256, 64);
	check_blocks(&a, (uint64_t[]){64, 320}, 1);
	hm_arena_free(&a, 0, 64);
	check_blocks(&a, (uint64_t[]){0, 384}, 1);
	hm_arena_free(&a, 512, 64);
	hm_arena_free(&a, 576, 64);
	check_blocks(&a, (uint64_t[]){0, 384, 512, 128}, 2);
	hm_arena_free(&a, 384, 64);
	hm_arena_free(&a, 448, 64);
	check_blocks(&a, (uint64_t[]){0, 640}, 1);
	CHECK_EQ(a.used, 0);
	CHECK_EQ(a.ranges, 0);
	hm_arena_fini(&a);

	CHECK_EQ(hm_arena_init(&a, 512), 0); /* fragmentation, first fit */
	for (int i = 0; i < 8; i++)
		alloc(&a, 64, NULL);
	for (int i = 0; i < 8; i += 2)
		hm_arena_free(&a, 64 * (uint64_t)i, 64);
	CHECK_EQ(a.size - a.used, 256);
	CHECK_EQ(hm_arena_largest_free(&a), 64);
	CHECK_EQ(alloc(&a, 128, NULL), UINT64_MAX);
	hm_arena_free(&a, 64, 64);
	CHECK_EQ(alloc(&a, 128, NULL), 0);
	CHECK_EQ(alloc(&a, 64, NULL), 128);
	hm_arena_fini(&a);

	/* many ranges: the free list grows */
	CHECK_EQ(hm_arena_init(&a, 64 * 1000), 0);
	for (int i = 0; i < 1000; i++)
		alloc(&a, 64, NULL);
	for (int i = 0; i < 1000; i += 2)
		CHECK_EQ(hm_arena_free(&a, 64 * (uint64_t)i, 64), 0);
	CHECK_EQ(a.nfree, 500);
	for (int i = 1; i < 1000; i += 2)
		CHECK_EQ(hm_arena_free(&a, 64 * (uint64_t)i, 64), 0);
	check_blocks(&a, (uint64_t[]){0, 64000}, 1);
	hm_arena_fini(&a);
}

static void pressure(void)
{
	fake f;
	const char *flags[] = {"-arena", "262144", NULL};
	fake_start(&f, flags);
	echo *e = echo_start(&f, 99, 0);
	homa_options o;
	homa_options_init(&o);
	o.op_timeout_ns = 200000000;
	homa_client *c = attach_or_die(&f, &o);
	homa_addr a;
	homa_addr_parse("127.0.0.1", 99, &a);
	static uint8_t big[300000];
	uint64_t ids[20];
	for (int i = 0; i < 20; i++) { /* 2 MB through 256 KB */
		memset(big, i, 100000);
		struct iovec iov = {big, 100000};
		CHECK_EQ(homa_send(c, &a, &iov, 1, 0, 0, &ids[i]), 0);
	}
	for (int i = 0; i < 20; i++) {
		homa_msg m;
		CHECK_EQ(homa_wait(c, ids[i], &m, 10000000000ll), 0);
		CHECK_EQ(m.length, 100000);
		CHECK_EQ(m.data[0], i);
		CHECK_EQ(m.data[99999], i);
		homa_msg_release(c, &m);
	}
	CHECK_EQ(stats_of(c).arena_used, 0);
	struct iovec never = {big, 262145};
	CHECK_EQ(homa_send(c, &a, &never, 1, 0, 0, NULL), HOMA_EINVAL); /* never fits */
	homa_destroy(c);

	/* full: the engine reads nothing */
	c = attach_or_die(&f, &o);
	fake_cmd(&f, "pause");
	struct iovec two = {big, 200000}, one = {big, 100000};
	CHECK_EQ(homa_send(c, &a, &two, 1, 0, 0, NULL), HOMA_ETIMEDOUT); /* no Accepted */
	uint64_t w0 = stats_of(c).arena_waits;
	CHECK_EQ(homa_send(c, &a, &one, 1, 0, 0, NULL), HOMA_EARENA);
	CHECK_EQ(stats_of(c).arena_waits, w0 + 1);
	fake_cmd(&f, "resume");
	int64_t deadline = now_ns() + 5000000000ll;
	while (stats_of(c).arena_used && now_ns() < deadline) { /* the late Released frees it */
		homa_msg m;
		if (homa_receive(c, &m, 50000000) == 0)
			homa_msg_release(c, &m);
	}
	CHECK_EQ(stats_of(c).arena_used, 0);
	uint64_t id;
	CHECK_EQ(homa_send(c, &a, &one, 1, 0, 0, &id), 0);
	homa_msg m;
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
	homa_msg_release(c, &m);
	homa_destroy(c);
	echo_stop(e);
	fake_stop(&f);
}

int main(void)
{
	unit();
	pressure();
	return 0;
}

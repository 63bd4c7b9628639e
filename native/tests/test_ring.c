/*
 * test_ring: the rings (python's test_ring.py): push and pop, full,
 * across 2^64, corrupt indices counted and ignored, the wait flag; then
 * exchanges through a fake engine whose rings start 300 entries before
 * 2^64, with 16 slots each.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

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

/* The lost wake-up race: a producer thread pushes bursts and wakes the
 * consumer only when it finds the wait flag raised after its push (as the
 * engine does: tail store, full fence, flag swap); the consumer sleeps
 * (hm_cons_prepare_sleep: flag, fence, one more look) with a 10 s poll.
 * A lost wake-up would stall it: the test bounds the whole run. */
struct race {
	hm_ring p;
	int efd;
	uint64_t n;
	atomic_ulong wakes;
};

static void *produce(void *arg)
{
	struct race *r = arg;
	uint8_t b[4 * HM_ENTRY_SIZE];
	uint64_t next = 0;
	while (next < r->n) {
		unsigned k = (unsigned)(next % 4) + 1;
		if (k > r->n - next)
			k = (unsigned)(r->n - next);
		for (unsigned i = 0; i < k; i++)
			entry(b + i * HM_ENTRY_SIZE, next + i);
		unsigned done = hm_prod_push(&r->p, b, k);
		next += done;
		atomic_thread_fence(memory_order_seq_cst); /* the tail before the flag */
		if (atomic_load_explicit((_Atomic uint32_t *)r->p.wait, memory_order_relaxed) &&
		    atomic_exchange((_Atomic uint32_t *)r->p.wait, 0)) {
			uint64_t one = 1;
			CHECK(write(r->efd, &one, 8) == 8);
			atomic_fetch_add(&r->wakes, 1);
		}
		if (next % 64 == 0)
			usleep(1); /* let the consumer go to sleep now and then */
	}
	return NULL;
}

static void lost_wakeup(void)
{
	uint8_t *m = ring_mem(16, 0);
	struct race r = {.n = 200000};
	hm_ring c;
	CHECK_EQ(hm_ring_attach(&r.p, m, 16, 1), 0);
	CHECK_EQ(hm_ring_attach(&c, m, 16, 0), 0);
	r.efd = eventfd(0, EFD_NONBLOCK);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, produce, &r) == 0);
	uint8_t out[16 * HM_ENTRY_SIZE];
	uint64_t want = 0, sleeps = 0;
	int64_t t0 = now_ns();
	while (want < r.n) {
		unsigned got = hm_cons_pop(&c, out, 16);
		for (unsigned i = 0; i < got; i++)
			CHECK_EQ(value(out + i * HM_ENTRY_SIZE), want++);
		if (got || !hm_cons_prepare_sleep(&c))
			continue;
		sleeps++;
		struct pollfd p = {.fd = r.efd, .events = POLLIN};
		CHECK(poll(&p, 1, 10000) == 1); /* a lost wake-up: 10 s of nothing */
		uint64_t v;
		CHECK(read(r.efd, &v, 8) == 8);
		hm_cons_wake_up(&c);
	}
	pthread_join(t, NULL);
	CHECK(now_ns() - t0 < 20000000000ll);
	CHECK_EQ(c.corrupt + r.p.corrupt, 0);
	printf("lost wake-up race: %llu entries, %llu sleeps, %lu wake-ups\n", (unsigned long long)r.n,
	       (unsigned long long)sleeps, atomic_load(&r.wakes));
	close(r.efd);
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
	lost_wakeup();
	across_2_64();
	return 0;
}

/*
 * test_alloc: the hot path allocates nothing once warm. malloc, calloc,
 * realloc are wrapped here (forwarding to glibc's) and counted while a
 * client exchanges messages with an echo server in this process:
 * detached sends and send + wait, receive, reply, release, both ends.
 * Skipped under AddressSanitizer and ThreadSanitizer, which own malloc.
 */
#include <stdatomic.h>
#include <string.h>

#include "util.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
int main(void)
{
	fprintf(stderr, "skipped: the sanitizer replaces malloc\n");
	return 77;
}
#else
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static atomic_int counting;
static atomic_long allocs;

void *malloc(size_t n)
{
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add(&allocs, 1);
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add(&allocs, 1);
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add(&allocs, 1);
	return __libc_realloc(p, n);
}

static void exchanges(homa_client *c, const homa_addr *a, int n)
{
	uint8_t buf[100];
	memset(buf, 'a', sizeof(buf));
	struct iovec iov = {buf, sizeof(buf)};
	for (int i = 0; i < n; i++) {
		homa_msg m;
		if (i % 2) {
			for (int k = 0; k < 8; k++)
				CHECK_EQ(homa_send(c, a, &iov, 1, (uint64_t)k, HOMA_SEND_DETACHED, NULL), 0);
			for (int k = 0; k < 8; k++) {
				CHECK_EQ(homa_receive(c, &m, 5000000000ll), 0);
				CHECK_EQ(m.kind, HOMA_MSG_RESPONSE);
				homa_msg_release(c, &m);
			}
		} else {
			uint64_t id;
			CHECK_EQ(homa_send(c, a, &iov, 1, 0, 0, &id), 0);
			CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
			homa_msg_release(c, &m);
		}
	}
}

int main(void)
{
	fake f;
	fake_start(&f, NULL);
	echo *e = echo_start(&f, 99, HOMA_REPLY_DETACHED);
	homa_client *c = attach_or_die(&f, NULL);
	homa_addr a;
	homa_addr_parse("127.0.0.1", 99, &a);
	exchanges(c, &a, 2000); /* warm-up: the tables reach their size */
	atomic_store(&counting, 1);
	exchanges(c, &a, 10000);
	atomic_store(&counting, 0);
	long n = atomic_load(&allocs);
	if (n) {
		fprintf(stderr, "%ld allocations in 10000 rounds (45,000 exchanges)\n", n);
		return 1;
	}
	homa_stats s = stats_of(c);
	CHECK_EQ(s.bad_completions + s.unexpected_completions, 0);
	homa_destroy(c);
	echo_stop(e);
	fake_stop(&f);
	return 0;
}
#endif

/*
 * test_fuzz: 3,000 random completions injected into a live client (ops,
 * flags, ports, ids, lengths, pages, ranges and error codes drawn near
 * and past their limits). Each must end up counted exactly once: as bad,
 * unexpected, a page return refused, or (a well-formed request to its
 * bound port in free pages) a request; the client then still works.
 * Under make asan this is the memory-safety check of the completion path.
 */
#include <string.h>
#include <unistd.h>

#include "entry.h"
#include "util.h"

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static uint64_t pick(const uint64_t *v, unsigned n) { return v[rnd() % n]; }

int main(void)
{
	fake f;
	const char *flags[] = {"-pool-pages", "16", NULL};
	fake_start(&f, flags);
	homa_client *c = attach_or_die(&f, NULL);
	CHECK_EQ(homa_bind(c, 300), 0);
	enum { N = 3000 };
	static const uint64_t ops[] = {0, 1, 2, 3, 4, 5, 6, 255};
	static const uint64_t small[] = {0, 1, 2, 3, 7, 300, 301, 0x7fff, 0x8000, 0xffff};
	static const uint64_t ids[] = {0, 1, 2, 3, 4, 5, 1ull << 63, (1ull << 63) | (3ull << 32) | 1, UINT64_MAX};
	static const uint64_t lens[] = {0, 1, 64, 65536, 65537, 1000000, 1000001, UINT32_MAX};
	static const uint64_t pages[] = {0, 1, 2, 15, 16, 17, UINT32_MAX};
	static const uint64_t offs[] = {0, 64, 4 << 20, (4 << 20) - 64, UINT64_MAX};
	static const uint64_t errs[] = {0, 1, 8, 10, 11, 16, 19, 21, 26, 27, 0xffff};
	for (int i = 0; i < N; i++) {
		hm_entry e;
		memset(&e, 0, sizeof(e));
		e.op = (uint8_t)pick(ops, 8);
		e.flags = rnd() % 4 == 0 ? (uint8_t)rnd() : (uint8_t)(rnd() % 2);
		e.port = (uint16_t)pick(small, 10);
		e.length = (uint32_t)pick(lens, 8);
		e.cookie = pick(ids, 9);
		e.rpc = pick(ids, 9);
		if (rnd() % 2) {
			e.ip[0] = 127;
			e.ip[3] = 1;
		}
		if (rnd() % 8 == 0)
			e.ip6[15] = 1;
		e.peer_port = (uint16_t)pick(small, 10);
		e.err = (uint16_t)pick(errs, 11);
		e.offset = pick(offs, 5);
		e.page = (uint32_t)pick(pages, 7);
		e.pages = (uint32_t)pick(pages, 7);
		if (i % 2) { /* half of them well-formed, then perhaps one field changed */
			memset(&e, 0, sizeof(e));
			e.op = (uint8_t)(1 + rnd() % 5);
			e.cookie = e.op == HM_COMP_REQUEST ? 0 : 1 + rnd() % 8;
			e.rpc = e.op == HM_COMP_REQUEST ? 1 + 2 * (rnd() % 1000) : 2 * (rnd() % 8);
			e.port = e.op == HM_COMP_REQUEST ? (rnd() % 4 ? 300 : 301) : 0;
			e.ip[0] = 127;
			e.ip[3] = 1;
			e.peer_port = (uint16_t)(1 + rnd() % 0x8000);
			e.err = e.op == HM_COMP_ERROR ? (uint16_t)(16 + rnd() % 11) : 0;
			if (e.op == HM_COMP_REQUEST || e.op == HM_COMP_RESPONSE) {
				e.length = (uint32_t)(1 + rnd() % 65536);
				e.page = (uint32_t)(rnd() % 16);
				e.pages = 1;
			}
			if (e.op == HM_COMP_RELEASED) {
				e.offset = 64 * (rnd() % 64);
				e.length = 64;
			}
			switch (rnd() % 8) {
			case 0:
				e.page = (uint32_t)pick(pages, 7);
				break;
			case 1:
				e.cookie = pick(ids, 9);
				break;
			case 2:
				e.flags = 1;
				break;
			}
		}
		uint8_t b[64];
		hm_entry_encode(&e, b);
		char hex[129];
		for (int k = 0; k < 64; k++)
			sprintf(hex + 2 * k, "%02x", b[k]);
		const char *ans = fake_cmd(&f, "inject 0 %s", hex);
		CHECK(strstr(ans, "error") == NULL);
	}
	homa_stats s;
	int64_t deadline = now_ns() + 10000000000ll;
	uint64_t sum = 0;
	do {
		homa_poll(c);
		s = stats_of(c);
		sum = s.bad_completions + s.unexpected_completions + s.page_return_errors + s.requests;
	} while (sum < N && now_ns() < deadline);
	usleep(50000);
	homa_poll(c);
	s = stats_of(c);
	sum = s.bad_completions + s.unexpected_completions + s.page_return_errors + s.requests;
	if (sum < N || sum - N > s.page_returns) {
		fprintf(stderr, "%llu of %d counted: bad %llu unexpected %llu page_return_errors %llu requests %llu\n",
			(unsigned long long)sum, N, (unsigned long long)s.bad_completions,
			(unsigned long long)s.unexpected_completions, (unsigned long long)s.page_return_errors,
			(unsigned long long)s.requests);
		return 1;
	}
	printf("%d random completions: %llu bad, %llu unexpected, %llu page returns refused, %llu requests\n", N,
	       (unsigned long long)s.bad_completions, (unsigned long long)s.unexpected_completions,
	       (unsigned long long)s.page_return_errors, (unsigned long long)s.requests);
	homa_msg m; /* requests that passed every check: taken and released */
	while (homa_receive(c, &m, 0) == 0) {
		CHECK(m.kind == HOMA_MSG_REQUEST || m.kind == HOMA_MSG_FAILED);
		homa_msg_release(c, &m);
	}
	/* the client still works */
	echo *e = echo_start(&f, 99, 0);
	homa_addr a;
	homa_addr_parse("127.0.0.1", 99, &a);
	struct iovec x = {"still here", 10};
	uint64_t id;
	CHECK_EQ(homa_send(c, &a, &x, 1, 0, 0, &id), 0);
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
	CHECK(m.length == 10 && memcmp(m.data, "still here", 10) == 0);
	homa_msg_release(c, &m);
	CHECK_EQ(stats_of(c).sq_corrupt + stats_of(c).cq_corrupt, 0);
	homa_destroy(c);
	echo_stop(e);
	fake_stop(&f);
	return 0;
}

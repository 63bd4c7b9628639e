/*
 * test_echo: round trips through an echo server (another client) of 1 B
 * to 1,000,000 B, send + wait and detached sends collected by receive,
 * many outstanding at once; pages and arena ranges all come back. Twice:
 * with the header's features (quiet detached submissions, pages riding on
 * sends and replies), then as a version-1 worker without them.
 */
#include <string.h>
#include <unistd.h>

#include "util.h"

#define PORT 99

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 31 + seed);
}

static void run(void)
{
	fake f;
	fake_start(&f, NULL);
	echo *srv = echo_start(&f, PORT, 0);
	homa_client *c = attach_or_die(&f, NULL);
	homa_addr dst;
	CHECK_EQ(homa_addr_parse("127.0.0.1", PORT, &dst), 0);
	static uint8_t buf[1000000];
	size_t sizes[] = {1, 2, 63, 64, 65, 1000, 65535, 65536, 65537, 100000, 500000, 1000000};
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		fill(buf, n, i);
		struct iovec iov = {buf, n};
		uint64_t id = 0;
		CHECK_EQ(homa_send(c, &dst, &iov, 1, 1000 + i, 0, &id), 0);
		CHECK(id != 0 && (id & 1) == 0);
		homa_msg m;
		CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
		CHECK_EQ(m.kind, HOMA_MSG_RESPONSE);
		CHECK_EQ(m.id, id);
		CHECK_EQ(m.tag, 1000 + i);
		CHECK_EQ(m.length, n);
		CHECK(memcmp(m.data, buf, n) == 0);
		homa_msg again;
		CHECK_EQ(homa_wait(c, id, &again, 0), HOMA_ENORPC); /* claimed */
		homa_msg_release(c, &m);
		CHECK_EQ(m.handle, 0);
		homa_msg_release(c, &m); /* idempotent */
	}
	/* a gathered message */
	struct iovec parts[3] = {{"abc", 3}, {"", 0}, {"defgh", 5}};
	uint64_t id;
	CHECK_EQ(homa_send(c, &dst, parts, 3, 7, 0, &id), 0);
	homa_msg m;
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
	CHECK_EQ(m.length, 8);
	CHECK(memcmp(m.data, "abcdefgh", 8) == 0);
	homa_msg_release(c, &m);

	/* many outstanding: 100 sends, then their outcomes through receive */
	enum { N = 100 };
	int seen[N] = {0};
	for (int i = 0; i < N; i++) {
		uint64_t v = (uint64_t)i * 7919;
		struct iovec iov = {&v, sizeof(v)};
		unsigned flags = i % 2 ? HOMA_SEND_DETACHED : 0;
		CHECK_EQ(homa_send(c, &dst, &iov, 1, (uint64_t)i, flags, NULL), 0);
	}
	for (int got = 0; got < N; got++) {
		CHECK_EQ(homa_receive(c, &m, 5000000000ll), 0);
		CHECK_EQ(m.kind, HOMA_MSG_RESPONSE);
		CHECK(m.tag < N && !seen[m.tag]);
		seen[m.tag] = 1;
		uint64_t v;
		CHECK_EQ(m.length, sizeof(v));
		memcpy(&v, m.data, sizeof(v));
		CHECK_EQ(v, m.tag * 7919);
		homa_msg_release(c, &m);
	}
	CHECK_EQ(homa_receive(c, &m, 1000000), HOMA_ETIMEDOUT);

	/* burst receive */
	for (int i = 0; i < 10; i++) {
		struct iovec iov = {"x", 1};
		CHECK_EQ(homa_send(c, &dst, &iov, 1, (uint64_t)i, HOMA_SEND_DETACHED, NULL), 0);
	}
	int got = 0;
	homa_msg ms[4];
	while (got < 10) {
		int n = homa_receive_burst(c, ms, 4, 5000000000ll);
		CHECK(n >= 1 && n <= 4);
		for (int i = 0; i < n; i++)
			homa_msg_release(c, &ms[i]);
		got += n;
	}
	CHECK_EQ(homa_poll(c) >= 0, 1);
	usleep(20000);
	homa_poll(c);
	homa_stats s = stats_of(c);
	CHECK_EQ(s.bad_completions, 0);
	CHECK_EQ(s.unexpected_completions, 0);
	CHECK_EQ(s.arena_used, 0);
	CHECK_EQ(s.pool_pages_held, 0);
	CHECK_EQ(s.messages_alive, 0);
	CHECK_EQ(s.rpcs_outstanding, 0);
	CHECK_EQ(s.sends, 12 + 1 + N + 10);
	CHECK_EQ(s.sq_corrupt + s.cq_corrupt, 0);
	const char *ans = fake_cmd(&f, "session 1");
	CHECK_EQ(json_int(ans, "pages_held"), 0);
	CHECK_EQ(json_int(ans, "bad_submissions"), 0);
	if (attach_features) { /* detached sends went quiet, released pages rode on sends */
		CHECK(json_int(ans, "quiet") > 0);
		CHECK(json_int(ans, "pages_on_submit") > 0);
	} else {
		CHECK_EQ(json_int(ans, "quiet"), 0);
		CHECK_EQ(json_int(ans, "pages_on_submit"), 0);
	}
	homa_destroy(c);
	echo_stop(srv);
	fake_stop(&f);
}

int main(void)
{
	run();
	attach_features = 0; /* again as a version-1 worker: Accepted for every submission, ReturnPages entries */
	run();
	return 0;
}

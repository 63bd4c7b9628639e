/*
 * test_pages: receive-pool pages held and given back: a response holds
 * its page until released (in the client's and the engine's accounts),
 * releases batched and given back by the next submission or wait; a
 * small pool where requests wait for pages the server holds; the engine's
 * other release modes (Released flagged on the Accepted, or separate).
 */
#include <string.h>
#include <unistd.h>

#include "util.h"

static homa_addr dst(uint16_t port)
{
	homa_addr a;
	homa_addr_parse("127.0.0.1", port, &a);
	return a;
}

static void lifetime(void)
{
	fake f;
	fake_start(&f, NULL);
	echo *e = echo_start(&f, 99, 0);
	homa_client *c = attach_or_die(&f, NULL);
	homa_addr a = dst(99);
	struct iovec h = {"hello", 5};
	uint64_t id;
	homa_msg m, keep[10];
	CHECK_EQ(homa_send(c, &a, &h, 1, 0, 0, &id), 0);
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
	CHECK_EQ(stats_of(c).pool_pages_held, 1);
	CHECK_EQ(json_int(fake_cmd(&f, "session 1"), "pages_held"), 1);
	homa_msg_release(c, &m);
	CHECK(m.data == NULL && m.handle == 0);
	CHECK_EQ(homa_send(c, &a, &h, 1, 0, 0, &id), 0); /* the page rides on it (or goes back before a wait) */
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
	homa_msg_release(c, &m);
	homa_poll(c);
	usleep(50000);
	CHECK_EQ(stats_of(c).pool_pages_held, 0);
	CHECK_EQ(json_int(fake_cmd(&f, "session 1"), "pages_held"), 0);
	/* ten messages held at once, released in another order */
	for (int i = 0; i < 10; i++) {
		CHECK_EQ(homa_send(c, &a, &h, 1, 0, 0, &id), 0);
		CHECK_EQ(homa_wait(c, id, &keep[i], 5000000000ll), 0);
	}
	homa_stats s = stats_of(c);
	CHECK_EQ(s.pool_pages_held, 10);
	CHECK_EQ(s.messages_alive, 10);
	for (int i = 9; i >= 0; i -= 2)
		homa_msg_release(c, &keep[i]);
	for (int i = 0; i < 10; i += 2)
		homa_msg_release(c, &keep[i]);
	CHECK_EQ(stats_of(c).messages_alive, 0);
	homa_poll(c);
	usleep(50000);
	s = stats_of(c);
	CHECK_EQ(s.pool_pages_held, 0);
	CHECK_EQ(s.page_return_errors, 0);
	CHECK(s.page_returns >= 1);
	CHECK_EQ(json_int(fake_cmd(&f, "session 1"), "pages_held"), 0);
	homa_destroy(c);
	echo_stop(e);
	fake_stop(&f);
}

/* a pool of 4 pages: requests of 2 pages each wait at the server until it
 * gives pages back */
static void small_pool(void)
{
	fake f;
	const char *flags[] = {"-pool-pages", "4", NULL};
	fake_start(&f, flags);
	homa_client *srv = attach_or_die(&f, NULL);
	CHECK_EQ(homa_bind(srv, 31), 0);
	homa_client *c = attach_or_die(&f, NULL);
	homa_addr a = dst(31);
	static uint8_t big[100000];
	struct iovec b = {big, sizeof(big)};
	for (int i = 0; i < 6; i++)
		CHECK_EQ(homa_send(c, &a, &b, 1, (uint64_t)i, HOMA_SEND_DETACHED, NULL), 0);
	homa_msg held[2], m;
	CHECK_EQ(homa_receive(srv, &held[0], 5000000000ll), 0);
	CHECK_EQ(homa_receive(srv, &held[1], 5000000000ll), 0);
	CHECK_EQ(homa_receive(srv, &m, 100000000), HOMA_ETIMEDOUT); /* the pool is full */
	for (int k = 0; k < 2; k++) {
		struct iovec r = {"ok", 2};
		CHECK_EQ(homa_reply(srv, &held[k], &r, 1, HOMA_REPLY_DETACHED), 0);
		homa_msg_release(srv, &held[k]);
	}
	for (int got = 0; got < 6; got++) {
		if (got >= 2) { /* the other four come as the server gives pages back */
			CHECK_EQ(homa_receive(srv, &m, 5000000000ll), 0);
			CHECK_EQ(m.kind, HOMA_MSG_REQUEST);
			CHECK_EQ(m.length, sizeof(big));
			struct iovec r = {"ok", 2};
			CHECK_EQ(homa_reply(srv, &m, &r, 1, HOMA_REPLY_DETACHED), 0);
			homa_msg_release(srv, &m);
		}
		/* the client's pool is 4 pages too: it takes each response as it comes */
		CHECK_EQ(homa_receive(c, &m, 5000000000ll), 0);
		CHECK_EQ(m.kind, HOMA_MSG_RESPONSE);
		CHECK_EQ(m.length, 2);
		homa_msg_release(c, &m);
	}
	int64_t deadline = now_ns() + 2000000000ll;
	while (stats_of(srv).replies < 6 && now_ns() < deadline) /* the last Released: a quiet reply's answer */
		homa_poll(srv);
	homa_stats s = stats_of(srv);
	CHECK_EQ(s.replies, 6);
	CHECK_EQ(s.bad_completions + s.unexpected_completions + s.page_return_errors, 0);
	homa_destroy(c);
	homa_destroy(srv);
	fake_stop(&f);
}

static void release_mode(const char *mode)
{
	fake f;
	const char *flags[] = {"-release", mode, NULL};
	fake_start(&f, flags);
	echo *e = echo_start(&f, 99, HOMA_REPLY_DETACHED);
	homa_client *c = attach_or_die(&f, NULL);
	homa_addr a = dst(99);
	static uint8_t big[100000];
	size_t sizes[] = {10, 100000};
	for (int i = 0; i < 2; i++)
		for (int detached = 0; detached < 2; detached++) {
			struct iovec b = {big, sizes[i]};
			uint64_t id;
			homa_msg m;
			CHECK_EQ(homa_send(c, &a, &b, 1, 0, detached ? HOMA_SEND_DETACHED : 0, &id), 0);
			if (detached)
				CHECK_EQ(homa_receive(c, &m, 5000000000ll), 0);
			else
				CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
			CHECK_EQ(m.length, sizes[i]);
			homa_msg_release(c, &m);
		}
	int64_t deadline = now_ns() + 2000000000ll;
	while (stats_of(c).arena_used && now_ns() < deadline)
		homa_poll(c);
	homa_stats s = stats_of(c);
	CHECK_EQ(s.arena_used, 0);
	CHECK_EQ(s.bad_completions + s.unexpected_completions, 0);
	homa_destroy(c);
	echo_stop(e);
	fake_stop(&f);
}

int main(void)
{
	lifetime();
	small_pool();
	release_mode("flag");
	release_mode("separate");
	return 0;
}

/*
 * test_doorbell: an engine whose loop sleeps (300 ms at a time) with its
 * doorbell armed (shmfake -doorbell): libhoma takes the doorbell at attach
 * and rings it when a push finds the loop asleep, so each exchange
 * completes without waiting out the sleep; the engine counts the sleeps a
 * doorbell ended. A client of a daemon without one never rings.
 */
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "util.h"

#define SEC 1000000000ll

static void exchanges(fake *f, homa_client *c, int n)
{
	homa_addr dst;
	CHECK_EQ(homa_addr_parse("127.0.0.1", 7, &dst), 0);
	uint8_t msg[100];
	memset(msg, 0x5a, sizeof(msg));
	for (int i = 0; i < n; i++) {
		usleep(5000); /* the engine's loop goes to sleep after 200 us idle */
		struct iovec iov = {msg, sizeof(msg)};
		uint64_t id = 0;
		CHECK_EQ(homa_send(c, &dst, &iov, 1, 0, 0, &id), 0);
		homa_msg m;
		CHECK_EQ(homa_wait(c, id, &m, 10 * SEC), 0);
		CHECK(m.length == sizeof(msg) && memcmp(m.data, msg, sizeof(msg)) == 0);
		homa_msg_release(c, &m);
	}
	(void)f;
}

int main(void)
{
	fake f;
	const char *flags[] = {"-doorbell", "-idle", "300ms", "-echo", "7", NULL};
	fake_start(&f, flags);
	homa_options o;
	homa_options_init(&o);
	o.spin_ns = 0;
	homa_client *c = attach_or_die(&f, &o);
	CHECK(c->bell >= 0);
	int64_t t0 = now_ns();
	exchanges(&f, c, 5);
	int64_t took = now_ns() - t0;
	homa_stats s = stats_of(c);
	long long woke = json_int(fake_cmd(&f, "sessions"), "doorbell_wakeups");
	if (s.doorbells == 0 || woke <= 0) {
		fprintf(stderr, "rang %llu times, the engine woke %lld times in %lld ms; want both\n",
			(unsigned long long)s.doorbells, woke, (long long)(took / 1000000));
		return 1;
	}
	homa_destroy(c);
	fake_stop(&f);

	const char *plain[] = {"-echo", "7", NULL};
	fake_start(&f, plain);
	c = attach_or_die(&f, &o);
	CHECK(c->bell < 0);
	exchanges(&f, c, 2);
	CHECK_EQ(stats_of(c).doorbells, 0);
	homa_destroy(c);
	fake_stop(&f);
	printf("test_doorbell: %llu rings, %lld wake-ups, 5 exchanges in %lld ms\n", (unsigned long long)s.doorbells,
	       woke, (long long)(took / 1000000));
	return 0;
}

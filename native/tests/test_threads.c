/*
 * test_threads: what crosses threads and processes: homa_wake ends a wait
 * of another thread (or the next one, once); homa_close and
 * homa_shutdown end a wait with HOMA_ECLOSED; a message released by
 * another thread while one waits goes back without blocking; the daemon
 * ending the session gives HOMA_EDEAD, to a caller that only polls
 * (timeout 0) within a few milliseconds too; messages stay readable after
 * homa_close until homa_destroy.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

struct waiter {
	homa_client *c;
	int rc;
	int64_t took;
};

static void *receive_forever(void *arg)
{
	struct waiter *w = arg;
	homa_msg m;
	int64_t t0 = now_ns();
	w->rc = homa_receive(w->c, &m, -1);
	w->took = now_ns() - t0;
	if (w->rc == 0)
		homa_msg_release(w->c, &m);
	return NULL;
}

static void wake(fake *f)
{
	homa_options o;
	homa_options_init(&o);
	o.spin_ns = 1000;
	homa_client *c = attach_or_die(f, &o);
	CHECK_EQ(homa_bind(c, 21), 0);
	struct waiter w = {c, 0, 0};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, receive_forever, &w) == 0);
	usleep(100000);
	homa_wake(c);
	pthread_join(t, NULL);
	CHECK_EQ(w.rc, HOMA_ETIMEDOUT);
	/* no wait in progress: the next one returns at once, once */
	homa_wake(c);
	homa_msg m;
	int64_t t0 = now_ns();
	CHECK_EQ(homa_receive(c, &m, 5000000000ll), HOMA_ETIMEDOUT);
	CHECK(now_ns() - t0 < 1000000000ll);
	t0 = now_ns();
	CHECK_EQ(homa_receive(c, &m, 30000000), HOMA_ETIMEDOUT);
	CHECK(now_ns() - t0 >= 30000000);
	/* a call waiting for its submission's answer is not ended by a wake:
	 * it leaves it to the next wait for an outcome */
	homa_wake(c);
	CHECK_EQ(homa_bind(c, 23), 0);
	t0 = now_ns();
	CHECK_EQ(homa_receive(c, &m, 5000000000ll), HOMA_ETIMEDOUT);
	CHECK(now_ns() - t0 < 1000000000ll);
	CHECK(homa_fd(c) >= 0);
	homa_stats s = stats_of(c);
	CHECK(s.sleeps >= 1);
	/* close from another thread ends the wait */
	CHECK(pthread_create(&t, NULL, receive_forever, &w) == 0);
	usleep(100000);
	homa_close(c);
	pthread_join(t, NULL);
	CHECK_EQ(w.rc, HOMA_ECLOSED);
	CHECK_EQ(homa_fd(c), -1);
	homa_wake(c); /* harmless after close */
	homa_close(c); /* idempotent */
	CHECK_EQ(homa_bind(c, 22), HOMA_ECLOSED);
	homa_destroy(c);
	/* shutdown: lock-free, then every blocking call is ECLOSED */
	c = attach_or_die(f, &o);
	w.c = c;
	CHECK(pthread_create(&t, NULL, receive_forever, &w) == 0);
	usleep(50000);
	homa_shutdown(c);
	pthread_join(t, NULL);
	CHECK_EQ(w.rc, HOMA_ECLOSED);
	CHECK_EQ(homa_receive(c, &m, 0), HOMA_ECLOSED);
	homa_destroy(c);
}

/* a request released by another thread while the server waits */
static void release_elsewhere(fake *f)
{
	homa_client *srv = attach_or_die(f, NULL);
	CHECK_EQ(homa_bind(srv, 13), 0);
	homa_client *c = attach_or_die(f, NULL);
	homa_addr a;
	homa_addr_parse("127.0.0.1", 13, &a);
	struct iovec r = {"r", 1};
	CHECK_EQ(homa_send(c, &a, &r, 1, 0, HOMA_SEND_DETACHED, NULL), 0);
	homa_msg req;
	CHECK_EQ(homa_receive(srv, &req, 5000000000ll), 0);
	CHECK_EQ(stats_of(srv).pool_pages_held, 1);
	struct waiter w = {srv, 0, 0};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, receive_forever, &w) == 0);
	usleep(100000);
	int64_t t0 = now_ns();
	homa_msg_release(srv, &req); /* does not block on the waiting thread */
	CHECK(now_ns() - t0 < 50000000);
	usleep(100000);
	const char *ans = fake_cmd(f, "session -1");
	(void)ans;
	homa_wake(srv);
	pthread_join(t, NULL);
	CHECK_EQ(w.rc, HOMA_ETIMEDOUT);
	CHECK_EQ(stats_of(srv).pool_pages_held, 0);
	homa_destroy(c);
	homa_destroy(srv);
}

static void daemon_gone(fake *f)
{
	homa_options o;
	homa_options_init(&o);
	o.max_sleep_ns = 50000000;
	homa_client *c = attach_or_die(f, &o);
	CHECK_EQ(homa_bind(c, 12), 0);
	const char *ans = fake_cmd(f, "sessions");
	long long n = json_int(ans, "attached");
	CHECK(n >= 1);
	ans = fake_cmd(f, "kill -1");
	CHECK(strstr(ans, "error") == NULL);
	homa_msg m;
	CHECK_EQ(homa_receive(c, &m, 5000000000ll), HOMA_EDEAD);
	homa_addr a;
	homa_addr_parse("127.0.0.1", 99, &a);
	struct iovec x = {"x", 1};
	CHECK_EQ(homa_send(c, &a, &x, 1, 0, 0, NULL), HOMA_EDEAD);
	CHECK_EQ(homa_poll(c), HOMA_EDEAD);
	homa_destroy(c);
}

/* A caller that never waits (a progress loop: receives with timeout 0,
 * homa_poll) never sleeps, where an ended session used to be seen only:
 * it polled on forever. */
static void daemon_gone_polling(fake *f)
{
	homa_client *c = attach_or_die(f, NULL);
	CHECK_EQ(homa_bind(c, 13), 0);
	homa_msg m[4];
	CHECK_EQ(homa_receive_burst(c, m, 4, 0), HOMA_ETIMEDOUT);
	const char *ans = fake_cmd(f, "kill -1");
	CHECK(strstr(ans, "error") == NULL);
	int64_t t0 = now_ns();
	int rc;
	while ((rc = homa_receive_burst(c, m, 4, 0)) == HOMA_ETIMEDOUT && now_ns() - t0 < 5000000000ll)
		;
	CHECK_EQ(rc, HOMA_EDEAD);
	CHECK_EQ(homa_poll(c), HOMA_EDEAD);
	homa_destroy(c);

	c = attach_or_die(f, NULL);
	ans = fake_cmd(f, "kill -1");
	CHECK(strstr(ans, "error") == NULL);
	t0 = now_ns();
	while ((rc = homa_poll(c)) >= 0 && now_ns() - t0 < 5000000000ll)
		;
	CHECK_EQ(rc, HOMA_EDEAD);
	homa_destroy(c);
}

static void close_keeps_messages(fake *f)
{
	echo *e = echo_start(f, 99, 0);
	homa_client *c = attach_or_die(f, NULL);
	homa_addr a;
	homa_addr_parse("127.0.0.1", 99, &a);
	struct iovec k = {"keep me", 7};
	uint64_t id;
	CHECK_EQ(homa_send(c, &a, &k, 1, 0, 0, &id), 0);
	homa_msg m;
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
	homa_close(c);
	CHECK(memcmp(m.data, "keep me", 7) == 0); /* still mapped */
	homa_msg_release(c, &m);
	CHECK_EQ(homa_send(c, &a, &k, 1, 0, 0, NULL), HOMA_ECLOSED);
	homa_destroy(c);
	echo_stop(e);
}

int main(void)
{
	fake f;
	fake_start(&f, NULL);
	wake(&f);
	release_elsewhere(&f);
	close_keeps_messages(&f);
	daemon_gone(&f);
	daemon_gone_polling(&f);
	fake_stop(&f);
	return 0;
}

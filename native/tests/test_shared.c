/*
 * test_shared: one client shared by threads (its calls serialised by its
 * lock): three threads each send and wait 300 times while a fourth
 * releases their messages and a fifth keeps waking the client; every
 * response is its own request's.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "util.h"

static homa_client *c;
static homa_addr dst;
static atomic_int done;

static void *caller(void *arg)
{
	uint64_t me = (uint64_t)(uintptr_t)arg;
	for (uint64_t i = 0; i < 300; i++) {
		uint64_t v[2] = {me, i};
		struct iovec iov = {v, sizeof(v)};
		uint64_t id;
		CHECK_EQ(homa_send(c, &dst, &iov, 1, me, 0, &id), 0);
		homa_msg m;
		int rc;
		while ((rc = homa_wait(c, id, &m, 5000000000ll)) == HOMA_ETIMEDOUT) /* a wake: wait again */
			;
		CHECK_EQ(rc, 0);
		CHECK_EQ(m.tag, me);
		CHECK(m.length == sizeof(v) && memcmp(m.data, v, sizeof(v)) == 0);
		homa_msg_release(c, &m);
	}
	return NULL;
}

static void *waker(void *arg)
{
	(void)arg;
	while (!done) {
		homa_wake(c);
		homa_stats s = stats_of(c);
		(void)s;
	}
	return NULL;
}

int main(void)
{
	fake f;
	fake_start(&f, NULL);
	echo *e = echo_start(&f, 99, HOMA_REPLY_DETACHED);
	c = attach_or_die(&f, NULL);
	homa_addr_parse("127.0.0.1", 99, &dst);
	pthread_t t[3], w;
	pthread_create(&w, NULL, waker, NULL);
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, caller, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	done = 1;
	pthread_join(w, NULL);
	homa_poll(c);
	homa_stats s = stats_of(c);
	CHECK_EQ(s.bad_completions + s.unexpected_completions, 0);
	CHECK_EQ(s.rpcs_outstanding, 0);
	CHECK_EQ(s.messages_alive, 0);
	homa_destroy(c);
	echo_stop(e);
	fake_stop(&f);
	return 0;
}

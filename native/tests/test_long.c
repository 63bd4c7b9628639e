/*
 * test_long: a region the daemon sized for 64 MiB messages (64 MiB of
 * arena, 1024 pool pages, MaxMessage 64 MiB in its header): a 64 MiB round
 * trip, max_message from the header, and a caller's smaller max_message
 * refusing longer sends locally.
 */
#include <string.h>

#include "util.h"

#define MIB64 (64u << 20)

int main(void)
{
	fake f;
	const char *flags[] = {"-arena", "67108864", "-pool-pages", "1024", "-region-max-message", "67108864", NULL};
	fake_start(&f, flags);
	echo *e = echo_start(&f, 99, HOMA_REPLY_DETACHED);
	homa_client *c = attach_or_die(&f, NULL);
	CHECK_EQ(homa_max_message(c), MIB64);
	homa_layout l;
	homa_get_layout(c, &l);
	CHECK_EQ(l.max_message, MIB64);
	CHECK_EQ(l.pool_pages, 1024);
	uint8_t *big = malloc(MIB64);
	CHECK(big != NULL);
	for (size_t i = 0; i < MIB64; i += 4096)
		big[i] = (uint8_t)(i >> 12);
	big[MIB64 - 1] = 0x5a;
	homa_addr a;
	homa_addr_parse("127.0.0.1", 99, &a);
	struct iovec iov = {big, MIB64};
	uint64_t id;
	CHECK_EQ(homa_send(c, &a, &iov, 1, 1, 0, &id), 0);
	homa_msg m;
	CHECK_EQ(homa_wait(c, id, &m, 30000000000ll), 0);
	CHECK_EQ(m.length, MIB64);
	CHECK(memcmp(m.data, big, MIB64) == 0);
	CHECK_EQ(stats_of(c).pool_pages_held, 1024);
	homa_msg_release(c, &m);
	homa_destroy(c);

	homa_options o;
	homa_options_init(&o);
	o.max_message = 1000;
	c = attach_or_die(&f, &o);
	CHECK_EQ(homa_max_message(c), 1000);
	struct iovec small = {big, 1000}, over = {big, 1001};
	CHECK_EQ(homa_send(c, &a, &over, 1, 0, 0, NULL), HOMA_EINVAL);
	CHECK_EQ(homa_send(c, &a, &small, 1, 0, 0, &id), 0);
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
	CHECK_EQ(m.length, 1000);
	homa_msg_release(c, &m);
	homa_destroy(c);
	free(big);
	echo_stop(e);
	fake_stop(&f);
	return 0;
}

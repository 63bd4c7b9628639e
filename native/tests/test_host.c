/*
 * test_host: homa_host_info_get against an engine whose headers say the
 * host (shmfake -host-info): its IPv4 address, which a send to the engine's
 * echo port reaches, its IPv6 address, link speed and MTU; a caller's
 * shorter struct filled only as far as its size; then against one that
 * says nothing (an older daemon's header): HOMA_ENOTSUP, every field zero.
 */
#include <string.h>

#include "util.h"

#define SEC 1000000000ll

static void check_said(fake *f)
{
	homa_client *c = attach_or_die(f, NULL);
	homa_host_info h;
	memset(&h, 0xee, sizeof(h));
	h.size = sizeof(h);
	CHECK_EQ(homa_host_info_get(c, &h), 0);
	CHECK_EQ(h.size, sizeof(h));
	CHECK_EQ(h.link_mbps, 100000);
	CHECK_EQ(h.mtu, 9000);
	CHECK_EQ(h.reserved, 0);
	char buf[64];
	CHECK(h.ipv4.family == 4 && h.ipv4.port == 0 && h.ipv4.reserved == 0);
	CHECK(strcmp(homa_addr_format(&h.ipv4, buf, sizeof(buf)), "10.1.2.3") == 0);
	for (int i = 4; i < 16; i++)
		CHECK_EQ(h.ipv4.ip[i], 0);
	CHECK(h.ipv6.family == 6 && h.ipv6.port == 0);
	CHECK(strcmp(homa_addr_format(&h.ipv6, buf, sizeof(buf)), "fd00::7") == 0);

	/* the address is this worker's host: the engine's echo port answers there */
	homa_addr dst = h.ipv4;
	dst.port = 7;
	struct iovec iov = {"to myself", 9};
	uint64_t id = 0;
	CHECK_EQ(homa_send(c, &dst, &iov, 1, 0, 0, &id), 0);
	homa_msg m;
	CHECK_EQ(homa_wait(c, id, &m, 10 * SEC), 0);
	CHECK(m.length == 9 && memcmp(m.data, "to myself", 9) == 0);
	homa_msg_release(c, &m);

	/* an older caller's struct: filled up to its size, no further */
	homa_host_info small;
	memset(&small, 0xee, sizeof(small));
	small.size = 12; /* size, link_mbps, mtu */
	CHECK_EQ(homa_host_info_get(c, &small), 0);
	CHECK(small.size == 12 && small.link_mbps == 100000 && small.mtu == 9000);
	CHECK(small.reserved == 0xeeeeeeee && small.ipv4.family == 0xee);
	small.size = 4;
	CHECK_EQ(homa_host_info_get(c, &small), HOMA_EINVAL);
	CHECK_EQ(homa_host_info_get(c, NULL), HOMA_EINVAL);
	CHECK_EQ(homa_host_info_get(NULL, &h), HOMA_EINVAL);
	homa_destroy(c);
}

static void check_unsaid(fake *f)
{
	homa_client *c = attach_or_die(f, NULL);
	homa_host_info h;
	memset(&h, 0xee, sizeof(h));
	h.size = sizeof(h);
	CHECK_EQ(homa_host_info_get(c, &h), HOMA_ENOTSUP);
	CHECK(h.size == sizeof(h) && h.link_mbps == 0 && h.mtu == 0 && h.ipv4.family == 0 && h.ipv6.family == 0);
	CHECK(strcmp(homa_strerror(HOMA_ENOTSUP), "the daemon does not say this") == 0);
	homa_destroy(c);
}

int main(void)
{
	fake f;
	const char *said[] = {"-host-info", "-ip", "10.1.2.3", "-ip6", "fd00::7", "-link-mbps", "100000", "-mtu", "9000",
			      "-echo", "7", NULL};
	fake_start(&f, said);
	check_said(&f);
	fake_stop(&f);

	const char *unsaid[] = {"-echo", "7", NULL};
	fake_start(&f, unsaid);
	check_unsaid(&f);
	fake_stop(&f);
	return 0;
}

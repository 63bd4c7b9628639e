/*
 * test_bad: completions the client must not trust, injected by the fake
 * engine: malformed ones (unknown op, unknown flag, an error without a
 * code, pages outside the pool, too few pages, a range outside the arena,
 * a peer of both families) counted as bad; well-formed ones nobody waits
 * for counted as unexpected, their pages given back; an Accepted for the
 * wrong port; exchanges carry on meanwhile.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "entry.h"
#include "util.h"

static void inject(fake *f, int session, const hm_entry *e, int raw_ff)
{
	uint8_t b[64];
	if (raw_ff)
		memset(b, 0xff, sizeof(b));
	else
		hm_entry_encode(e, b);
	char hex[129];
	for (int i = 0; i < 64; i++)
		sprintf(hex + 2 * i, "%02x", b[i]);
	const char *ans = fake_cmd(f, "inject %d %s", session, hex);
	CHECK(strstr(ans, "error") == NULL);
}

struct bind_arg {
	homa_client *c;
	int rc;
};

static void *bind42(void *arg)
{
	struct bind_arg *b = arg;
	b->rc = homa_bind(b->c, 42);
	return NULL;
}

struct reply_arg {
	homa_client *c;
	homa_msg *req;
	int rc;
};

static void *reply_once(void *arg)
{
	struct reply_arg *r = arg;
	struct iovec iov = {"too long", 8};
	r->rc = homa_reply(r->c, r->req, &iov, 1, 0);
	return NULL;
}

/* a reply refused with PEER_MESSAGE_LENGTH (injected: the fake has no
 * kernel-Homa peers) leaves the request open for another reply */
static void peer_message_length(void)
{
	fake f;
	fake_start(&f, NULL);
	homa_client *srv = attach_or_die(&f, NULL); /* session 0: cookie 1 binds */
	CHECK_EQ(homa_bind(srv, 50), 0);
	homa_client *c = attach_or_die(&f, NULL);
	homa_addr a;
	homa_addr_parse("127.0.0.1", 50, &a);
	struct iovec q = {"q", 1};
	uint64_t id;
	CHECK_EQ(homa_send(c, &a, &q, 1, 0, 0, &id), 0);
	homa_msg req;
	CHECK_EQ(homa_receive(srv, &req, 5000000000ll), 0);
	fake_cmd(&f, "pause");
	struct reply_arg r = {srv, &req, -100};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, reply_once, &r) == 0);
	usleep(50000);
	hm_entry e = {.op = HM_COMP_ERROR, .flags = HM_COMP_FLAG_RELEASED, .cookie = 2, .rpc = req.id,
		      .err = HOMA_ERR_PEER_MESSAGE_LENGTH};
	inject(&f, 0, &e, 0); /* delivered before the engine reads the reply once it resumes */
	fake_cmd(&f, "resume");
	pthread_join(t, NULL);
	CHECK_EQ(r.rc, HOMA_ERR_PEER_MESSAGE_LENGTH);
	struct iovec ok = {"ok", 2};
	int rc = homa_reply(srv, &req, &ok, 1, 0); /* open again: the engine answers (it took the first) */
	CHECK(rc != HOMA_EREPLIED);
	CHECK_EQ(homa_reply(srv, &req, &ok, 1, 0), HOMA_EREPLIED);
	homa_msg_release(srv, &req);
	homa_destroy(c);
	homa_destroy(srv);
	fake_stop(&f);
}

int main(void)
{
	fake f;
	fake_start(&f, NULL);
	echo *e = echo_start(&f, 99, 0); /* session 0 */
	homa_client *c = attach_or_die(&f, NULL); /* session 1 */
	CHECK_EQ(homa_bind(c, 300), 0);
	long long p1 = json_int(fake_cmd(&f, "hold 1 1"), "page");
	long long p2 = json_int(fake_cmd(&f, "hold 1 1"), "page");
	CHECK(p1 >= 0 && p2 >= 0);
	const uint8_t ip[4] = {127, 0, 0, 1};
	hm_entry bad[7], unexp[5];
	memset(bad, 0, sizeof(bad));
	memset(unexp, 0, sizeof(unexp));
	bad[1] = (hm_entry){.op = HM_COMP_ACCEPTED, .flags = 4, .cookie = 1};
	bad[2] = (hm_entry){.op = HM_COMP_ERROR, .cookie = 1};
	bad[3] = (hm_entry){.op = HM_COMP_REQUEST, .port = 300, .rpc = 1, .peer_port = 5, .length = 10, .page = 10000,
			    .pages = 1};
	bad[4] = (hm_entry){.op = HM_COMP_REQUEST, .port = 300, .rpc = 1, .peer_port = 5, .length = 65537, .pages = 1};
	bad[5] = (hm_entry){.op = HM_COMP_RELEASED, .cookie = 1, .offset = 1ull << 40, .length = 1};
	bad[6] = (hm_entry){.op = HM_COMP_REQUEST, .port = 300, .rpc = 1, .peer_port = 5, .length = 1, .pages = 1};
	memset(bad[6].ip6, 1, 16);
	for (int i = 3; i < 7; i++)
		memcpy(bad[i].ip, ip, 4);
	unexp[0] = (hm_entry){.op = HM_COMP_ACCEPTED, .cookie = 999999};
	unexp[1] = (hm_entry){.op = HM_COMP_RESPONSE, .cookie = 5, .rpc = 424242, .peer_port = 1, .length = 3,
			      .page = (uint32_t)p1, .pages = 1};
	unexp[2] = (hm_entry){.op = HM_COMP_REQUEST, .port = 301, .rpc = 7, .peer_port = 5, .length = 3,
			      .page = (uint32_t)p2, .pages = 1};
	unexp[3] = (hm_entry){.op = HM_COMP_RELEASED, .cookie = 12345, .length = 64};
	unexp[4] = (hm_entry){.op = HM_COMP_ERROR, .cookie = 777, .rpc = 778, .err = HOMA_ERR_TIMEOUT};
	memcpy(unexp[1].ip, ip, 4);
	memcpy(unexp[2].ip, ip, 4);
	for (int i = 0; i < 7; i++)
		inject(&f, 1, &bad[i], i == 0);
	for (int i = 0; i < 5; i++)
		inject(&f, 1, &unexp[i], 0);
	homa_addr a;
	homa_addr_parse("127.0.0.1", 99, &a);
	static uint8_t q[70000];
	memset(q, 'q', sizeof(q));
	size_t sizes[] = {5, 70000};
	for (int i = 0; i < 2; i++) {
		struct iovec iov = {q, sizes[i]};
		uint64_t id;
		CHECK_EQ(homa_send(c, &a, &iov, 1, 0, 0, &id), 0);
		homa_msg m;
		CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
		CHECK_EQ(m.length, sizes[i]);
		CHECK(memcmp(m.data, q, sizes[i]) == 0);
		homa_msg_release(c, &m);
	}
	homa_poll(c);
	homa_stats s = stats_of(c);
	CHECK_EQ(s.bad_completions, 7);
	CHECK_EQ(s.unexpected_completions, 5);
	CHECK_EQ(s.page_return_errors, 0);
	char why[256];
	CHECK(strstr(homa_last_bad(c, why, sizeof(why)), "unexpected completion") != NULL);
	usleep(50000);
	CHECK_EQ(json_int(fake_cmd(&f, "session 1"), "pages_held"), 0); /* the refused messages' pages went back */

	/* an Accepted for a bind of another port, then the real one */
	fake_cmd(&f, "pause");
	struct bind_arg b = {c, -100};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, bind42, &b) == 0);
	usleep(50000);
	hm_entry acc = {.op = HM_COMP_ACCEPTED, .cookie = 0, .port = 43};
	/* the bind's cookie: the client's next one. Count the cookies used:
	 * bind 300 (1), two sends (2, 3) -> 4 */
	acc.cookie = 4;
	inject(&f, 1, &acc, 0);
	fake_cmd(&f, "resume");
	pthread_join(t, NULL);
	CHECK_EQ(b.rc, 0);
	CHECK_EQ(stats_of(c).bad_completions, 8);

	/* a corrupt CQ tail: counted, ignored, the client goes on */
	size_t len;
	uint8_t *region = homa_region(c, &len);
	homa_layout l;
	homa_get_layout(c, &l);
	uint64_t *tail = (uint64_t *)(region + l.cq_offset);
	fake_cmd(&f, "pause");
	uint64_t saved = __atomic_load_n(tail, __ATOMIC_ACQUIRE);
	__atomic_store_n(tail, saved + 1000000, __ATOMIC_RELEASE);
	homa_poll(c);
	__atomic_store_n(tail, saved, __ATOMIC_RELEASE);
	fake_cmd(&f, "resume");
	CHECK(stats_of(c).cq_corrupt >= 1);
	struct iovec iov = {q, 10};
	uint64_t id;
	CHECK_EQ(homa_send(c, &a, &iov, 1, 0, 0, &id), 0);
	homa_msg m;
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
	homa_msg_release(c, &m);
	homa_destroy(c);
	echo_stop(e);
	fake_stop(&f);
	peer_message_length();
	return 0;
}

/*
 * test_errors: RPC failures (port unreachable, peer unreachable) through
 * homa_wait and homa_receive; bind's refusals; bad arguments; a send the
 * daemon refuses as malformed; abort and abort_all; detached sends and
 * replies refused, their failures through homa_receive; attach refused;
 * a send at a named priority reaches the daemon with its level, a bad
 * priority flag is refused, and a daemon without the feature says so.
 */
#include <string.h>
#include <unistd.h>

#include "util.h"

static homa_addr addr(const char *ip, uint16_t port)
{
	homa_addr a;
	CHECK_EQ(homa_addr_parse(ip, port, &a), 0);
	return a;
}

static void failures(fake *f)
{
	homa_client *c = attach_or_die(f, NULL);
	struct iovec x = {"x", 1};
	homa_addr a = addr("127.0.0.1", 4321);
	uint64_t id;
	homa_msg m;
	CHECK_EQ(homa_send(c, &a, &x, 1, 5, 0, &id), 0);
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), HOMA_ERR_PORT_UNREACHABLE);
	CHECK_EQ(m.kind, HOMA_MSG_FAILED);
	CHECK_EQ(m.err, HOMA_ERR_PORT_UNREACHABLE);
	CHECK_EQ(m.id, id);
	CHECK_EQ(m.tag, 5);
	CHECK_EQ(m.refused, 0);
	a = addr("192.0.2.1", 4321);
	CHECK_EQ(homa_send(c, &a, &x, 1, 6, 0, &id), 0);
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), HOMA_ERR_UNREACHABLE);
	/* unclaimed: through receive */
	a = addr("127.0.0.1", 4321);
	CHECK_EQ(homa_send(c, &a, &x, 1, 7, 0, &id), 0);
	CHECK_EQ(homa_receive(c, &m, 5000000000ll), 0);
	CHECK_EQ(m.kind, HOMA_MSG_FAILED);
	CHECK_EQ(m.id, id);
	CHECK_EQ(m.err, HOMA_ERR_PORT_UNREACHABLE);
	CHECK_EQ(homa_wait(c, id, &m, 0), HOMA_ENORPC); /* claimed by receive */
	CHECK_EQ(stats_of(c).rpc_errors, 3);
	/* IPv6 destination: not the fake's host */
	a = addr("2001:db8::2", 9);
	CHECK_EQ(a.family, 6);
	CHECK_EQ(homa_send(c, &a, &x, 1, 8, 0, &id), 0);
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), HOMA_ERR_UNREACHABLE);
	CHECK_EQ(m.peer.family, 6);

	/* bind */
	CHECK_EQ(homa_bind(c, 5), 0);
	homa_client *d = attach_or_die(f, NULL);
	CHECK_EQ(homa_bind(d, 5), HOMA_ERR_PORT_IN_USE);
	CHECK_EQ(homa_bind(c, 0), HOMA_EINVAL);
	CHECK_EQ(homa_bind(c, 0x8000), HOMA_EINVAL);

	/* bad arguments */
	homa_addr bad;
	CHECK_EQ(homa_addr_parse("0.0.0.0", 5, &bad), HOMA_EINVAL);
	CHECK_EQ(homa_addr_parse("::", 5, &bad), HOMA_EINVAL);
	CHECK_EQ(homa_addr_parse("host", 5, &bad), HOMA_EINVAL);
	CHECK_EQ(homa_addr_parse("fe80::1%eth0", 5, &bad), HOMA_EINVAL);
	CHECK_EQ(homa_addr_parse("::ffff:10.0.0.2", 5, &bad), 0);
	CHECK_EQ(bad.family, 4);
	char txt[64];
	CHECK(strcmp(homa_addr_format(&bad, txt, sizeof(txt)), "10.0.0.2") == 0);
	CHECK(homa_addr_format(&bad, txt, 4) == NULL);
	a = addr("10.0.0.2", 0);
	CHECK_EQ(homa_send(c, &a, &x, 1, 0, 0, NULL), HOMA_EINVAL);
	a = addr("10.0.0.2", 0x8000);
	CHECK_EQ(homa_send(c, &a, &x, 1, 0, 0, NULL), HOMA_EINVAL);
	a = addr("127.0.0.1", 99);
	struct iovec empty = {"", 0};
	CHECK_EQ(homa_send(c, &a, &empty, 1, 0, 0, NULL), HOMA_EINVAL);
	CHECK_EQ(homa_send(c, &a, NULL, 0, 0, 0, NULL), HOMA_EINVAL);
	CHECK_EQ(homa_send(c, &a, &x, 1, 0, 4, NULL), HOMA_EINVAL);
	CHECK_EQ(homa_abort(c, 3), HOMA_EINVAL);
	CHECK_EQ(homa_abort(c, 1000), 0);
	CHECK_EQ(homa_wait(c, 1000, &m, 0), HOMA_ENORPC);
	homa_msg notreq = {.kind = HOMA_MSG_RESPONSE, .id = 2};
	CHECK_EQ(homa_reply(c, &notreq, &x, 1, 0), HOMA_EINVAL);
	homa_msg unknown = {.kind = HOMA_MSG_REQUEST, .id = 12345};
	CHECK_EQ(homa_reply(c, &unknown, &x, 1, 0), HOMA_EREPLIED);
	CHECK(strcmp(homa_strerror(HOMA_ETIMEDOUT), "timed out") == 0);
	CHECK(strcmp(homa_strerror(HOMA_ERR_NO_RPC), "no such RPC") == 0);
	CHECK(strcmp(homa_strerror(99), "error(99)") == 0);
	CHECK_EQ(homa_api_version(), HOMA_API_VERSION);
	homa_stats st = stats_of(c);
	CHECK_EQ(st.bad_completions + st.unexpected_completions, 0);
	homa_destroy(d);
	homa_destroy(c);
}

/* abort and abort_all against a server that never answers */
static void aborts(fake *f, uint16_t port)
{
	homa_client *srv = attach_or_die(f, NULL);
	CHECK_EQ(homa_bind(srv, port), 0); /* a port of its own: the engine unbinds a closed session's later */
	homa_client *c = attach_or_die(f, NULL);
	struct iovec h = {"hang", 4};
	homa_addr a = addr("127.0.0.1", port);
	uint64_t id;
	homa_msg m;
	CHECK_EQ(homa_send(c, &a, &h, 1, 1, 0, &id), 0);
	CHECK_EQ(homa_abort(c, id), 1);
	int rc = homa_wait(c, id, &m, 1000000000);
	CHECK(rc == HOMA_ERR_ABORTED || rc == HOMA_ENORPC);
	CHECK_EQ(homa_abort(c, id), 0);
	CHECK_EQ(homa_receive(c, &m, 50000000), HOMA_ETIMEDOUT); /* the aborted RPC's end is not delivered */
	homa_stats s = stats_of(c);
	CHECK_EQ(s.rpcs_outstanding, 0);
	CHECK_EQ(s.aborts, 1);
	/* a wait that times out leaves the RPC going; abort it then */
	CHECK_EQ(homa_send(c, &a, &h, 1, 2, 0, &id), 0);
	CHECK_EQ(homa_wait(c, id, &m, 20000000), HOMA_ETIMEDOUT);
	CHECK_EQ(homa_abort(c, id), 1);
	/* abort_all: outstanding ones, detached ones, and an ended one not claimed */
	for (int i = 0; i < 3; i++)
		CHECK_EQ(homa_send(c, &a, &h, 1, 10 + (uint64_t)i, i == 2 ? HOMA_SEND_DETACHED : 0, NULL), 0);
	homa_addr nowhere = addr("127.0.0.1", 4321);
	CHECK_EQ(homa_send(c, &nowhere, &h, 1, 20, 0, &id), 0);
	usleep(20000);
	CHECK_EQ(homa_poll(c) >= 0, 1);
	CHECK_EQ(homa_abort_all(c), 0);
	s = stats_of(c);
	CHECK_EQ(s.rpcs_outstanding, 0);
	CHECK_EQ(s.unexpected_completions, 0);
	CHECK_EQ(s.bad_completions, 0);
	CHECK_EQ(homa_receive(c, &m, 50000000), HOMA_ETIMEDOUT);
	/* the server got the requests; the replies of aborted RPCs are dropped */
	int n = 0;
	while (homa_receive(srv, &m, 100000000) == 0) {
		CHECK_EQ(m.kind, HOMA_MSG_REQUEST);
		struct iovec r = {"late", 4};
		homa_reply(srv, &m, &r, 1, HOMA_REPLY_DETACHED);
		homa_msg_release(srv, &m);
		n++;
	}
	CHECK_EQ(n, 5);
	CHECK_EQ(homa_receive(c, &m, 50000000), HOMA_ETIMEDOUT);
	homa_destroy(c);
	homa_destroy(srv);
}

/* a send the daemon refuses as malformed (its max message is smaller) */
static void bad_entry(void)
{
	fake f;
	const char *flags[] = {"-max-message", "1000", NULL};
	fake_start(&f, flags);
	homa_client *c = attach_or_die(&f, NULL);
	static uint8_t big[2000];
	struct iovec b = {big, sizeof(big)};
	homa_addr a = addr("127.0.0.1", 99);
	CHECK_EQ(homa_send(c, &a, &b, 1, 0, 0, NULL), HOMA_ERR_BAD_LENGTH);
	CHECK_EQ(stats_of(c).arena_used, 0); /* freed by the Released flag of the Error */
	/* detached: its refusal comes through receive */
	CHECK_EQ(homa_send(c, &a, &b, 1, 77, HOMA_SEND_DETACHED, NULL), 0);
	homa_msg m;
	CHECK_EQ(homa_receive(c, &m, 5000000000ll), 0);
	CHECK_EQ(m.kind, HOMA_MSG_FAILED);
	CHECK_EQ(m.refused, 1);
	CHECK_EQ(m.err, HOMA_ERR_BAD_LENGTH);
	CHECK_EQ(m.tag, 77);
	CHECK_EQ(m.id, 0);
	homa_stats s = stats_of(c);
	CHECK_EQ(s.send_refused, 1);
	CHECK_EQ(s.arena_used, 0);
	homa_destroy(c);
	fake_stop(&f);
}

/* detached sends over the per-worker RPC limit, and a detached reply to an
 * RPC its client aborted: refused, through receive */
static void refusals(void)
{
	fake f;
	const char *flags[] = {"-max-rpcs", "1", "-abort-ends-server", NULL};
	fake_start(&f, flags);
	homa_client *srv = attach_or_die(&f, NULL);
	CHECK_EQ(homa_bind(srv, 8), 0);
	homa_client *c = attach_or_die(&f, NULL);
	homa_addr a = addr("127.0.0.1", 8);
	struct iovec q = {"q", 1};
	uint64_t id;
	CHECK_EQ(homa_send(c, &a, &q, 1, 1, 0, &id), 0);
	CHECK_EQ(homa_send(c, &a, &q, 1, 2, HOMA_SEND_DETACHED, NULL), 0); /* over the limit */
	homa_msg m;
	CHECK_EQ(homa_receive(c, &m, 5000000000ll), 0);
	CHECK_EQ(m.kind, HOMA_MSG_FAILED);
	CHECK_EQ(m.refused, 1);
	CHECK_EQ(m.err, HOMA_ERR_LIMIT);
	CHECK_EQ(m.tag, 2);
	/* non-detached over the limit: the error code */
	CHECK_EQ(homa_send(c, &a, &q, 1, 3, 0, NULL), HOMA_ERR_LIMIT);
	homa_msg req;
	CHECK_EQ(homa_receive(srv, &req, 5000000000ll), 0);
	CHECK_EQ(req.kind, HOMA_MSG_REQUEST);
	CHECK_EQ(req.port, 8);
	CHECK_EQ(homa_abort(c, id), 1);
	struct iovec r = {"r", 1};
	CHECK_EQ(homa_reply(srv, &req, &r, 1, HOMA_REPLY_DETACHED), 0);
	CHECK_EQ(homa_reply(srv, &req, &r, 1, 0), HOMA_EREPLIED);
	homa_msg_release(srv, &req);
	CHECK_EQ(homa_receive(srv, &m, 5000000000ll), 0);
	CHECK_EQ(m.kind, HOMA_MSG_FAILED);
	CHECK_EQ(m.refused, 2);
	CHECK_EQ(m.err, HOMA_ERR_NO_RPC);
	CHECK_EQ(m.id, req.id == 0 ? m.id : m.id); /* req was cleared by release */
	CHECK(m.id & 1);
	homa_stats s = stats_of(srv);
	CHECK_EQ(s.reply_refused, 1);
	CHECK_EQ(s.rpc_errors, 1);
	CHECK_EQ(s.arena_used, 0);
	homa_destroy(c);
	homa_destroy(srv);
	fake_stop(&f);
}

static void attach_errors(fake *f)
{
	homa_client *c = NULL;
	char err[256];
	CHECK_EQ(homa_attach("/tmp/libhoma-no-such.sock", NULL, &c, err, sizeof(err)), HOMA_EATTACH);
	CHECK(strstr(err, "libhoma-no-such.sock") != NULL);
	CHECK(c == NULL);
	fake_cmd(f, "refuse on");
	CHECK_EQ(homa_attach(f->path, NULL, &c, err, sizeof(err)), HOMA_EREFUSED);
	CHECK(strstr(err, "refused") != NULL);
	fake_cmd(f, "refuse off");
	c = attach_or_die(f, NULL);
	homa_destroy(c);
}

/* the submission ring full while the engine is paused: HOMA_ESQFULL after
 * op_timeout; once the daemon has ended the session, HOMA_EDEAD */
static void sq_full(void)
{
	fake f;
	const char *flags[] = {"-sq", "4", NULL};
	fake_start(&f, flags);
	homa_options o;
	homa_options_init(&o);
	o.op_timeout_ns = 100000000;
	homa_client *c = attach_or_die(&f, &o);
	homa_addr a = addr("127.0.0.1", 99);
	struct iovec x = {"x", 1};
	fake_cmd(&f, "pause");
	for (int i = 0; i < 4; i++)
		CHECK_EQ(homa_send(c, &a, &x, 1, 0, HOMA_SEND_DETACHED, NULL), 0);
	int64_t t0 = now_ns();
	CHECK_EQ(homa_send(c, &a, &x, 1, 0, HOMA_SEND_DETACHED, NULL), HOMA_ESQFULL);
	CHECK(now_ns() - t0 >= 100000000);
	homa_stats s = stats_of(c);
	CHECK_EQ(s.sq_full_waits, 1);
	CHECK_EQ(s.arena_used, 4 * 64); /* the refused one's range is free again */
	fake_cmd(&f, "kill 0");
	fake_cmd(&f, "resume");
	t0 = now_ns();
	int rc = homa_send(c, &a, &x, 1, 0, HOMA_SEND_DETACHED, NULL);
	CHECK(rc == HOMA_EDEAD || rc == 0); /* the daemon may have drained the ring before it ended the session */
	homa_msg m;
	while (rc == 0)
		rc = homa_receive(c, &m, 5000000000ll);
	CHECK_EQ(rc, HOMA_EDEAD);
	CHECK(now_ns() - t0 < 2000000000ll);
	homa_destroy(c);
	fake_stop(&f);
}

static void priority(fake *f)
{
	echo *e = echo_start(f, 31, 0);
	homa_client *c = attach_or_die(f, NULL);
	struct iovec x = {"hi", 2};
	homa_addr a = addr("127.0.0.1", 31);
	uint64_t id;
	homa_msg m;
	CHECK_EQ(homa_send(c, &a, &x, 1, 1, HOMA_SEND_PRIORITY(5), &id), 0);
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
	homa_msg_release(c, &m);
	CHECK_EQ(homa_send(c, &a, &x, 1, 2, HOMA_SEND_PRIORITY(0) | HOMA_SEND_DETACHED, NULL), 0);
	CHECK_EQ(homa_receive(c, &m, 5000000000ll), 0);
	CHECK_EQ(m.kind, HOMA_MSG_RESPONSE);
	homa_msg_release(c, &m);
	CHECK_EQ(homa_send(c, &a, &x, 1, 3, 0, &id), 0);
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
	homa_msg_release(c, &m);
	const char *ans = fake_cmd(f, "session -1");
	CHECK_EQ(json_int(ans, "priority_sends"), 2);
	CHECK_EQ(json_int(ans, "last_priority"), 0);
	CHECK_EQ(homa_send(c, &a, &x, 1, 4, HOMA_SEND_PRIORITY(5) & ~2u, NULL), HOMA_EINVAL); /* a level, no flag */
	CHECK_EQ(homa_send(c, &a, &x, 1, 4, 0x100, NULL), HOMA_EINVAL);
	homa_destroy(c);

	attach_features = ~16u; /* as if the daemon lacked it (HM_FEATURE_PRIORITY) */
	c = attach_or_die(f, NULL);
	CHECK_EQ(homa_send(c, &a, &x, 1, 5, HOMA_SEND_PRIORITY(5), NULL), HOMA_ENOTSUP);
	CHECK_EQ(homa_send(c, &a, &x, 1, 6, 0, &id), 0);
	CHECK_EQ(homa_wait(c, id, &m, 5000000000ll), 0);
	homa_msg_release(c, &m);
	attach_features = ~0u;
	homa_destroy(c);
	echo_stop(e);
}

int main(void)
{
	fake f;
	fake_start(&f, NULL);
	failures(&f);
	aborts(&f, 7);
	attach_features = 0; /* as a version-1 worker: the detached send is not quiet */
	aborts(&f, 17);
	attach_features = ~0u;
	attach_errors(&f);
	priority(&f);
	fake_stop(&f);
	bad_entry();
	refusals();
	sq_full();
	return 0;
}
